"""Two runs of the main job at once on one host (what a second terminal does): each in its own lab slot,
both complete, and neither loses data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.metrics import read_audio, read_flows

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")


def test_two_runs_at_once_both_complete_with_their_data(tmp_path):
    runs = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        runs.append((out, subprocess.Popen(
            [sys.executable, "-m", "accessnet.run", "--scenario", "smoke", "--switch", "model", "--out", str(out)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    labs = []
    for out, p in runs:
        text, _ = p.communicate(timeout=240)
        assert p.returncode == 0, text[-3000:]
        reps = list(out.glob("*/*/rep0"))
        assert len(reps) == 1 and not list(out.glob("*/*/*.tmp")), text[-3000:]
        meta = json.loads((reps[0] / "meta.json").read_text())
        assert meta["status"] == "ok", meta.get("error")
        labs.append(meta["lab"])
        audio = read_audio(reps[0]).df
        assert len(audio) > 150 and audio["recv_ns"].notna().mean() > 0.99  # the audio got through
        flows = read_flows(reps[0])
        assert flows["completed"].tolist() == [1] and flows["bytes"].tolist() == [100000]
    assert labs[0] != labs[1]  # each in its own lab slot (names, namespaces, record)


def test_bmv2_control_ports_exist_only_inside_the_runs_switch_namespace():
    """BMv2's Thrift server listens on every address it can see (no option to bind one): run in the run's
    switch namespace, whose ports have no addresses, neither it nor P4Runtime is reachable from outside."""
    import random
    import socket

    from accessnet.leftovers import Lease
    from accessnet.profiles import profile
    from accessnet.switches import find_p4_tool, wait_port
    from accessnet.topology import AccessNet, sh

    exe = find_p4_tool("simple_switch_grpc")
    if not exe:
        pytest.skip("simple_switch_grpc not found (P4 toolchain)")
    thrift, grpc = random.randrange(20000, 30000), random.randrange(30000, 40000)
    with Lease() as lease:
        net = AccessNet(lease.prefix, profile("hspa"), registry=lease.registry)
        try:
            net.start()
            sw = net.sw.popen([exe, "--device-id", "1", *net.ports.bmv2_args(), "--thrift-port", str(thrift),
                               "--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{grpc}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_port(grpc, alive=lambda: sw.poll() is None, node=net.sw)
                try:  # a BMv2 built without Thrift (only --with-pi) has no Thrift server at all
                    wait_port(thrift, timeout=3, alive=lambda: sw.poll() is None, node=net.sw)
                except TimeoutError:
                    pass
                inside = sh(net.sw, "ss -Hltn")
                assert f"127.0.0.1:{grpc} " in inside or f"127.0.0.1]:{grpc} " in inside  # loopback only
                outside = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout
                assert f":{thrift} " not in outside and f":{grpc} " not in outside
                for port in (thrift, grpc):
                    with socket.socket() as s:
                        assert s.connect_ex(("127.0.0.1", port)) != 0
                addrs = sh(net.sw, "ip -o addr show")
                assert " inet " in addrs and all(" inet 127." in x or " inet6 " in x
                                                 for x in addrs.splitlines())  # only loopback has an address
            finally:
                sw.terminate()
                sw.wait(timeout=10)
        finally:
            net.stop()


def test_the_test_bmv2_listens_only_inside_a_namespace_of_its_own():
    """The tests' and the bench's BMv2 (``accessnet.bmv2_veth``) runs as the lab's: in a namespace of its own whose
    only address is loopback's, with its Thrift server listening there and nowhere in the root namespace, and its
    P4Runtime server on a Unix socket, through which the controller, here in the root namespace, configures it;
    ``close()`` leaves nothing behind (process, namespace, interfaces, socket, record)."""
    from accessnet import leftovers
    from accessnet.bmv2_veth import Bmv2, build_p4, missing_toolchain
    from accessnet.netns import in_ns, namespaces
    from tests.frames import tcp

    why = missing_toolchain()
    if why:
        pytest.skip(why)
    build_p4()

    def listeners(ns: str | None, pid: int) -> list[str]:
        out = subprocess.run(in_ns(ns, "ss", "-Hltunp"), capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if f"pid={pid}," in line]

    sw = Bmv2(k=4, program="plain_forward").start()
    try:
        pid, ns, ifs, sock = sw.proc.pid, sw.ns, dict(sw.ifs), sw.socket
        assert ns in namespaces() and str(os.getpid()) in ns
        assert listeners(None, pid) == []  # nothing of BMv2's listens on the host's interfaces
        inside = listeners(ns, pid)
        assert len(inside) == 1 and f":{sw.thrift} " in inside[0]  # Thrift, in its namespace only
        assert sock.is_socket() and sw.address == f"unix:{sock}"
        addrs = subprocess.run(["ip", "-n", ns, "-o", "addr", "show"], capture_output=True, text=True).stdout
        assert addrs and all(line.split()[1] == "lo" for line in addrs.splitlines())  # only loopback's address
        links = subprocess.run(["ip", "-n", ns, "-o", "link", "show"], capture_output=True, text=True).stdout
        assert all(f" {b}@" in links for _, b in ifs.values())  # BMv2's ports in its namespace, the test's outside
        sw.configure_plain()  # the controller, in the root namespace, reaches it
        sw.listen()
        sw.send([tcp(i) for i in range(3)], port=1)
        assert sw.wait_for(0, 0) and sw.collect(0, timeout=1)[0][2] != []  # and it forwards 1 -> 2
    finally:
        sw.close()
    assert sw.proc.poll() is not None and ns not in namespaces() and not sock.exists()
    for a, _ in ifs.values():
        assert subprocess.run(["ip", "link", "show", a], capture_output=True).returncode != 0
    assert leftovers.find_record(os.getpid()) is None


def test_a_test_bmv2_that_fails_to_start_leaves_nothing(monkeypatch):
    from accessnet import bmv2_veth, leftovers
    from accessnet.netns import namespaces

    why = bmv2_veth.missing_toolchain()
    if why:
        pytest.skip(why)
    monkeypatch.setattr(bmv2_veth, "bmv2_argv", lambda *a: ["false"])  # a switch that exits at once
    sw = bmv2_veth.Bmv2(k=5)
    try:
        with pytest.raises(RuntimeError, match="simple_switch_grpc exited"):
            sw.start()
        assert sw.proc.poll() is not None and sw.lease is None and sw.ns is None
        assert not [n for n in namespaces() if n.startswith(f"iwt-bmv2-{os.getpid()}-")]
        assert leftovers.find_record(os.getpid()) is None
    finally:
        sw.close()
