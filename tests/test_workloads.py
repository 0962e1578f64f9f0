"""Workloads as objects (no network needed): a stand-in host records what each workload starts. Two AQMs of
one replication start exactly the same traffic; the runner needs no code per workload."""

from __future__ import annotations

import subprocess
from pathlib import Path

import ipaddress
import re

import pytest

from accessnet import scenario as scen
from accessnet.addresses import V4, V6, Hosts
from accessnet.workloads import WORKLOADS, Lab, workloads_for

T0 = 1_800_000_000_000_000_000


class FakeNode:
    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def popen(self, argv, **kw):
        self.log.append((self.name, list(argv)))
        return subprocess.Popen(["true"])


class FakeRegistry:
    def process(self, *a) -> None:
        pass


class FakeNet:
    def __init__(self, log: list) -> None:
        self.srv, self.cli = FakeNode("srv", log), FakeNode("cli", log)
        self.registry = FakeRegistry()


def started(case: scen.Case, seed: int, out: Path, hosts: Hosts = V4) -> list:
    log: list = []
    lab = Lab(FakeNet(log), out, T0, 40.0, 2.0, "cubic", hosts.server, hosts.client)
    for w in workloads_for(case.spec, seed):
        w.start(lab)
    for p in lab.procs:
        p.wait()
    return log


def test_the_web_server_gets_nodelay_from_the_scenario(tmp_path):
    """[run] nodelay reaches the web server's command line (and meta.json through the scenario); absent, the
    server runs as before, Nagle's algorithm on."""
    for name, want in (("web6", False), ("web6-nodelay", True)):
        sc = scen.load(name, {"aqms": ["iwa"], "iws": [10]})
        assert sc.nodelay is want
        log: list = []
        lab = Lab(FakeNet(log), tmp_path, T0, 40.0, 2.0, "cubic", V4.server, V4.client, nodelay=sc.nodelay)
        lab.ensure_web_server()
        for p in lab.procs:
            p.wait()
        (argv,) = [a for _, a in log if "accessnet.web" in a and "server" in a]
        assert ("--nodelay" in argv) is want, argv


def test_two_aqms_of_a_replication_start_the_same_traffic(tmp_path):
    for name in ("web6", "burst6+6", "rtc5", "bulk"):
        sc = scen.load(name, {"aqms": ["fifo", "iwa"], "iws": [10]})
        fifo, iwa = sc.cases
        runs = [started(c, c.rep_seed(sc.seed, 3), tmp_path) for c in (fifo, iwa)]
        assert runs[0] == runs[1], name
        assert any("accessnet.audio" in argv for _, argv in runs[0])
        other_rep = started(fifo, fifo.rep_seed(sc.seed, 4), tmp_path)
        if name != "bulk":  # bulk has no random draw
            assert other_rep != runs[0], name


def test_each_section_is_one_workload_and_the_audio_always_runs():
    sc = scen.load("rtc5")
    loads = workloads_for(sc.cases[0].spec, 1)
    assert [w.section for w in loads] == ["audio", *[s for s in WORKLOADS if s in sc.data and s != "audio"]]
    assert [w.section for w in workloads_for({}, 1)] == ["audio"]


def test_bursts_are_numbered_across_workloads():
    loads = workloads_for({"web": {"flows": 2, "start_s": [10, 12]}, "burst": {"flows": 3},
                           "bulk": {"start_s": 5}}, 7)
    bursts = [b for w in loads for b in w.plan.get("bursts", [])]
    assert [b["burst"] for b in bursts] == [0, 1, 2, 3]
    assert bursts[2]["start_s"] - bursts[1]["start_s"] == 1.0  # the second burst of burstN+N
    assert sum(w.n_flows() for w in loads) == 2 + 3 + 3 + 1


def test_a_failed_replication_names_where_its_logs_are_kept(tmp_path, monkeypatch):
    """run_rep's failure path without a network: the error points into rep<k>/ (where the logs end up),
    not into the rep<k>.tmp/ that no longer exists after the rename; meta.json says failed."""
    import json

    from accessnet import replication

    class FakeLease:
        prefix, removed, registry = "i999", [], None

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    class FakeNet:
        def __init__(self, *a, **kw):
            pass

        def stop(self):
            pass

    def broken_start(sc, case, net, switch, loads, out, meta, irto=None):
        (out / "switch.log").write_text("boom\n")
        raise RuntimeError(f"model switch exited at start: see {out / 'switch.log'}")

    monkeypatch.setattr(replication, "Lease", FakeLease)
    monkeypatch.setattr(replication, "AccessNet", FakeNet)
    monkeypatch.setattr(replication, "start_lab", broken_start)
    sc = scen.load("smoke")
    meta = replication.run_rep(sc, sc.cases[0], 0, tmp_path / "case", "model")
    assert meta["status"] == "failed" and f"{tmp_path / 'case' / 'rep0' / 'switch.log'}" in meta["error"]
    assert json.loads((tmp_path / "case" / "rep0" / "meta.json").read_text())["error"] == meta["error"]
    assert (tmp_path / "case" / "rep0" / "switch.log").exists() and not (tmp_path / "case" / "rep0.tmp").exists()


def test_users_modes_keep_the_fresh_users_plan_and_command_and_share_the_draws(tmp_path):
    """[users] without a mode starts exactly the command and plan it always did; keepalive and h2 add their
    arguments and plan keys, with the same seed drawn (same page sizes and think times in every mode)."""
    base = {"count": 2, "idle_mean_s": 1.0, "start_s": 2.0}
    plans, cmds = {}, {}
    for mode, extra in (("fresh", {}), ("keepalive", {"mode": "keepalive", "objects": 4, "connections": 3,
                                                      "keepalive_timeout_s": 90}),
                        ("h2", {"mode": "h2", "objects": 8})):
        log: list = []
        lab = Lab(FakeNet(log), tmp_path, T0, 40.0, 2.0, "cubic", V4.server, V4.client)
        (w,) = [w for w in workloads_for({"users": {**base, **extra}}, 5) if w.section == "users"]
        w.start(lab)
        for p in lab.procs:
            p.wait()
        plans[mode], cmds[mode] = w.plan, next(argv for _, argv in log if "users" in argv)
    assert set(plans["fresh"]) == {"seed", "count", "start_s"}
    assert not any(a.startswith("--mode") or a == "--objects" for a in cmds["fresh"])
    assert plans["fresh"]["seed"] == plans["keepalive"]["seed"] == plans["h2"]["seed"]
    assert plans["keepalive"] == {**plans["fresh"], "mode": "keepalive", "objects": 4, "connections": 3}
    assert plans["h2"] == {**plans["fresh"], "mode": "h2", "objects": 8}
    ka = cmds["keepalive"]
    assert ka[:len(cmds["fresh"])] == cmds["fresh"]  # the fresh command, then the mode's arguments
    assert ka[len(cmds["fresh"]):] == ["--mode", "keepalive", "--objects", "4", "--connections", "3",
                                       "--keepalive-timeout-s", "90.0"]
    assert cmds["h2"][len(cmds["fresh"]):] == ["--mode", "h2", "--objects", "8"]


EVERY_SECTION = {"web": {"flows": 2}, "burst": {"flows": 2}, "bulk": {"start_s": 5}, "users": {"count": 2},
                 "rtc": {}, "webrtc": {}, "quic": {"connections": 2}}


def addresses_in(argv: list[str]) -> set[str]:
    """Every argument that is an IP address literal of either family (parsed by ipaddress, not by the lab)."""
    out = set()
    for a in argv:
        try:
            out.add(str(ipaddress.ip_address(a)))
        except ValueError:
            pass
    return out


@pytest.mark.parametrize("hosts", [V4, V6], ids=["ip4", "ip6"])
def test_every_workload_talks_over_the_labs_addresses_only(tmp_path, hosts, monkeypatch):
    """Each workload takes its addresses from the Lab (the run's family): every address any of them passes to
    a tool is the run's server or phone, of the run's family, and each workload passes at least one."""
    from accessnet import workloads
    monkeypatch.setattr(workloads, "wait_for_line", lambda *a: None)  # the QUIC server's "listening" (no real one)
    assert set(EVERY_SECTION) == set(WORKLOADS) - {"audio"}  # a new workload joins this test
    for section, cfg in EVERY_SECTION.items():
        spec = {section: cfg}
        log: list = []
        lab = Lab(FakeNet(log), tmp_path, T0, 40.0, 2.0, "cubic", hosts.server, hosts.client)
        for w in workloads_for(spec, 1):
            w.start(lab)
        for p in lab.procs:
            p.wait()
        used = set().union(*(addresses_in(argv) for _, argv in log))
        assert used and used <= {hosts.server, hosts.client}, (section, used)
        assert all(ipaddress.ip_address(a).version == hosts.version for a in used)
        other = V6 if hosts is V4 else V4
        assert not any(re.search(re.escape(a), " ".join(argv)) for _, argv in log for a in (other.server,
                                                                                          other.client))


class _Alive:
    def alive(self) -> bool:
        return True


class _NetAlive:
    def dead_hosts(self) -> list:
        return []


class _NeverDone:
    def ends_run(self) -> bool:
        return True

    def done(self) -> bool:
        return False


def test_the_runs_limit_counts_from_the_audios_start_not_from_the_workloads_start(tmp_path):
    """wait_for_end's limit (duration_s + 1 s) counts from t0, the audio's start, which start_lab sets up to
    STARTUP_BUDGET_S after the workloads are started; counted from the call it stopped a sender that never
    ends early by that slack before its media ended (issue 35: the Pion sender stopped at t = 24 of 31 s)."""
    import time

    from accessnet.replication import wait_for_end
    slack_s, duration_s = 1.5, 0.3
    t0 = time.time_ns() + int(slack_s * 1e9)
    lab = Lab(_NetAlive(), tmp_path, t0, duration_s, 0.0, "cubic", "10.0.0.1", "10.0.0.2")
    begin = time.monotonic()
    wait_for_end(lab, _Alive(), [_NeverDone()], audio_only_s=15.0)
    took = time.monotonic() - begin
    assert slack_s + duration_s + 1.0 - 0.05 <= took <= slack_s + duration_s + 1.0 + 3.0, took  # not early; late: load


def test_the_receivers_listen_past_the_runs_end_whatever_the_start_ups_slack(tmp_path):
    """A receiver's --duration counts from its own start, which is up to STARTUP_BUDGET_S before t0: it covers
    the budget, the run's 40 s and 5 s more (duration_s + 5 ended the webrtc and audio receivers at t ~ 28 of
    a 32 s run on the model switch, issue 35)."""
    from accessnet.workloads import STARTUP_BUDGET_S
    for name in ("rtc5", "webrtc5"):
        sc = scen.load(name, {"aqms": ["fifo"], "iws": [10]})
        log = started(sc.cases[0], 1, tmp_path)
        recvs = [argv for _, argv in log if "recv" in argv]
        assert len(recvs) == 2, (name, log)  # the audio's and the flow's
        for argv in recvs:
            assert float(argv[argv.index("--duration") + 1]) >= 40.0 + 5 + STARTUP_BUDGET_S, argv
