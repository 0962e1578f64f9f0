"""Lab slots (no network needed): every lease its own prefix; what a dead run left is removed by the next
owner of its slot; nothing of a live run is ever touched."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from accessnet import leftovers


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(leftovers, "STATE_DIR", tmp_path)
    return tmp_path


def test_leases_held_at_once_get_their_own_prefixes_and_records(state_dir):
    with leftovers.Lease() as a, leftovers.Lease() as b:
        assert a.prefix == "i000" and b.prefix == "i001"
        a.registry.process(12345, ["x"])
        assert json.loads((state_dir / "i000.json").read_text())["pids"] == {"12345": "x\0"}
        assert leftovers.find_record(__import__("os").getpid())[0] in ("i000", "i001")
    assert not list(state_dir.glob("*.json"))  # released: records removed
    with leftovers.Lease() as c:
        assert c.prefix == "i000"  # the freed slot is taken again


def started(*argv: str) -> subprocess.Popen:
    """A process, returned once it runs ``argv`` (right after fork its command line is still Python's)."""
    p = subprocess.Popen(list(argv))
    for _ in range(500):
        if leftovers.cmdline(p.pid) == "\0".join(argv) + "\0":
            return p
        time.sleep(0.01)
    raise AssertionError(f"{argv} did not start")


def _record(state_dir, prefix, owner, start, pids):
    (state_dir / f"{prefix}.json").write_text(json.dumps({"owner": owner, "owner_start": start, "pids": pids,
                                                          "links": []}))


def test_a_dead_runs_leftovers_are_removed_by_the_next_owner(state_dir):
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan = started("sleep", "60")
    try:
        _record(state_dir, "i000", dead.pid, "1", {str(orphan.pid): "sleep\0" + "60\0"})
        with leftovers.Lease() as lease:
            assert lease.prefix == "i000" and lease.removed == [f"pid {orphan.pid}"]
            assert orphan.wait(timeout=5) == -9
    finally:
        orphan.kill()


def test_a_live_owners_record_and_processes_are_never_touched(state_dir):
    owner = started("sleep", "60")  # a live run that (somehow) holds no lock
    try:
        start = leftovers._start_time(owner.pid)
        _record(state_dir, "i000", owner.pid, start, {str(owner.pid): "sleep\0" + "60\0"})
        with leftovers.Lease() as lease:
            assert lease.prefix == "i001"  # its slot is skipped
        assert owner.poll() is None
        assert json.loads((state_dir / "i000.json").read_text())["owner"] == owner.pid
    finally:
        owner.kill()
        owner.wait()


def test_a_reused_pid_is_not_taken_for_the_owner(state_dir):
    other = started("sleep", "60")  # alive, but started at another time than the recorded owner
    victim = started("sleep", "61")
    try:
        _record(state_dir, "i000", other.pid, "1", {str(victim.pid): "sleep\0" + "61\0", "999999": "gone\0"})
        with leftovers.Lease() as lease:
            assert lease.prefix == "i000" and lease.removed == [f"pid {victim.pid}"]
        assert other.poll() is None  # never in the record's pids: untouched
    finally:
        for p in (other, victim):
            p.kill()
            p.wait()


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="needs root (network namespaces)")
def test_a_dead_runs_namespace_and_socket_file_are_removed_by_the_next_owner(state_dir):
    """What the test BMv2 (accessnet.bmv2_veth) records besides its process and interfaces."""
    from accessnet.netns import add_namespace, delete_namespace, namespaces
    dead = subprocess.Popen(["true"])
    dead.wait()
    ns, sock = f"iwt-left-{__import__('os').getpid()}", state_dir / "x.p4rt.sock"
    add_namespace(ns)
    try:
        sock.touch()
        (state_dir / "i000.json").write_text(json.dumps({"owner": dead.pid, "owner_start": "1", "pids": {},
                                                         "links": [], "netns": [ns], "files": [str(sock)]}))
        with leftovers.Lease() as lease:
            assert lease.prefix == "i000" and lease.removed == [f"netns {ns}", str(sock)]
        assert ns not in namespaces() and not sock.exists()
    finally:
        delete_namespace(ns)
