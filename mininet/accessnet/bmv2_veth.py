"""BMv2 on veth ports, for tests and benchmarks: simple_switch_grpc, the controller, raw-socket I/O.

BMv2 runs as the lab runs it (``accessnet.switches``): in a network namespace of its own
(``iwt-bmv2-<pid>-<lab>t<k>``, made and deleted here), which holds its ports and no address but
loopback's, so its Thrift server (which listens on every address of its namespace, with no option to
bind one) is reachable only inside it, never on the host's interfaces. Its P4Runtime server listens
on a Unix socket (``/run/iwlab/<namespace>.p4rt.sock``) instead of a TCP port: the
controller, the tests' gRPC clients and ``python -m controller --address unix:...`` reach it from the
root namespace, and nothing reaches it over a network.

Ports (veth pairs named ``<lab>t<k><port>{a,b}`` with the lab slot ``<lab>`` this switch leases
(``leftovers.Lease``), so concurrent test runs never share a name and a killed test's leftovers (its
BMv2, namespace, interfaces and socket) are removed by the slot's next owner; BMv2 holds the ``b`` ends,
in its namespace, the test sends and captures on the ``a`` ends, in the root namespace):
1 = server side, 2 = client side (the bottleneck direction is 1 -> 2),
3 = monitor (telemetry clones). Everything is removed in ``close()``, also when ``start()`` fails.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import finsy as fy

from .leftovers import STATE_DIR, Lease
from .netns import NsNode, add_namespace, delete_namespace, in_ns, veth_up
from .rawsock import enable_auxdata, packet_socket, recv_frame
from .switches import bmv2_argv, find_p4_tool, terminate
from .topology import Ports
from controller.entries import forwarding
from controller.switch import COUNTER, BottleneckSwitch, DesiredState, SwitchTarget
from refmodel.params import PipelineParams
from refmodel.pipeline import Route
from refmodel.telemetry import Record, TelemetryError, decode_frame

ROOT = Path(__file__).resolve().parents[2]
ROUTES = {1: Route(2, True), 2: Route(1, False)}
PACKET_OUTGOING = 4
THRIFT_PORT = 9090  # BMv2's default, inside the switch's own namespace (as in the lab)
find_tool = find_p4_tool


def missing_toolchain() -> str | None:
    """None if BMv2 tests can run here, else the reason they cannot."""
    missing = [t for t in ("p4c-bm2-ss", "simple_switch_grpc") if not find_tool(t)]
    if missing:
        return f"P4 toolchain not found ({', '.join(missing)} not on PATH or in $P4_PREFIX/bin)"
    if os.geteuid() != 0:
        return "BMv2 tests need root (veth interfaces)"
    return None


def build_p4() -> None:
    r = subprocess.run(["make", "-s", "build"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"make build failed:\n{r.stdout}\n{r.stderr}")


class Sniffer(threading.Thread):
    def __init__(self, ifname: str) -> None:
        super().__init__(daemon=True)
        self.sock = packet_socket(ifname)
        enable_auxdata(self.sock)  # VLAN tags as sent (see accessnet.rawsock)
        self.sock.settimeout(0.1)
        self.frames: list[bytes] = []
        self.running = True

    def run(self) -> None:
        while self.running:
            try:
                data, addr = recv_frame(self.sock)
            except TimeoutError:
                continue
            except OSError:
                return
            if addr[2] != PACKET_OUTGOING:
                self.frames.append(data)

    def stop(self) -> None:
        self.running = False
        self.join(timeout=2)
        self.sock.close()


class Bmv2:
    def __init__(self, k: int = 0, program: str = "bottleneck", grpc_args: list[str] | None = None) -> None:
        self.k = k
        self.grpc_args = list(grpc_args or [])  # extra P4Runtime server options (e.g. TLS)
        self.program = program
        self.lease: Lease | None = None  # the lab slot: names of its own, never another run's or test's
        self.ifs: dict[int, tuple[str, str]] = {}
        self.proc: subprocess.Popen | None = None
        self.ns: str | None = None  # BMv2's own network namespace, while it exists
        self.socket: Path | None = None  # its P4Runtime server's Unix socket
        self.thrift = THRIFT_PORT
        self.log = ROOT / "build" / f"bmv2-test-{k}.log"
        self.sniffers: dict[int, Sniffer] = {}
        self.tx: dict[int, socket.socket] = {}

    # -- life cycle --------------------------------------------------------------
    @property
    def address(self) -> str:
        """Its P4Runtime server's gRPC address (a Unix socket)."""
        return f"unix:{self.socket}"

    def start(self) -> "Bmv2":
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        self.lease = Lease().acquire()
        name = f"{self.lease.prefix}t{self.k}"
        self.ns = f"iwt-bmv2-{os.getpid()}-{name}"
        self.socket = STATE_DIR / f"{self.ns}.p4rt.sock"
        self.ifs = {p: (f"{name}{p}a", f"{name}{p}b") for p in (1, 2, 3)}
        registry = self.lease.registry  # everything recorded before it is made: a kill at any point leaves nothing
        registry.netns([self.ns])
        registry.files([str(self.socket)])
        registry.links([a for a, _ in self.ifs.values()])
        add_namespace(self.ns)
        for a, b in self.ifs.values():
            subprocess.run(["ip", "link", "del", a], capture_output=True)
            subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b, "netns", self.ns], check=True)
            for ns, i in ((None, a), (self.ns, b)):
                subprocess.run(in_ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{i}.disable_ipv6=1"), capture_output=True)
                veth_up(ns, i)
        self._launch()
        for p, (a, _) in self.ifs.items():
            tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            tx.bind((a, 0))
            self.tx[p] = tx

    def _launch(self) -> None:
        ports = Ports(*(b for _, b in (self.ifs[p] for p in (1, 2, 3))))
        args = bmv2_argv(ports, self.thrift, self.address, self.grpc_args)
        self.socket.unlink(missing_ok=True)  # the file of a switch killed by restart()
        self.proc = NsNode(self.ns).popen(args, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        self.lease.registry.process(self.proc.pid, args)  # as it runs once ``ip netns exec`` has exec'd it
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"simple_switch_grpc exited: see {self.log}")
            with socket.socket(socket.AF_UNIX) as s:
                if s.connect_ex(str(self.socket)) == 0:
                    break
            time.sleep(0.1)

    def restart(self, down_s: float = 1.0) -> None:
        """Kill the switch (state and pipeline lost) and start a fresh one on the same ports and address."""
        self.proc.kill()
        self.proc.wait()
        time.sleep(down_s)
        self._launch()

    def close(self) -> None:
        """Stop everything ``start()`` began, whatever state it got to: the sockets, BMv2 (by its PID), the
        namespace (with BMv2's veth ends, and so their peers), the Unix socket, the lab slot."""
        try:
            for s in self.sniffers.values():
                s.stop()
            for s in self.tx.values():
                s.close()
            self.sniffers, self.tx = {}, {}
            terminate(self.proc)
        finally:
            if self.ns is not None:
                delete_namespace(self.ns)
                self.ns = None
            for a, _ in self.ifs.values():
                subprocess.run(["ip", "link", "del", a], capture_output=True)
            if self.socket is not None:
                self.socket.unlink(missing_ok=True)
            if self.lease is not None:
                self.lease.release()
                self.lease = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- control plane -------------------------------------------------------------
    def target(self, force: bool = True) -> SwitchTarget:
        return SwitchTarget(self.address, p4info=ROOT / "build" / f"{self.program}.p4info.txtpb",
                            p4blob=ROOT / "build" / f"{self.program}.json", force_pipeline=force)

    def configure(self, params: PipelineParams | None, routes=ROUTES, monitor: int | None = 3,
                  links: dict[int, PipelineParams] | None = None, clients: dict[int | str, int] | None = None) -> None:
        """A fresh pipeline (all registers reset) with this configuration: ``params`` for every link without
        its own, ``links`` link -> its own parameters, ``clients`` client IPv4 address -> link."""
        async def go():
            state = DesiredState(params, routes, monitor, dict(links or {}), dict(clients or {}))
            sw = BottleneckSwitch(self.target(), state)
            async with sw:
                await sw.wait_applied()
        asyncio.run(go())

    def configure_plain(self, routes=ROUTES) -> None:
        """For plain_forward.p4: a fresh pipeline with only the forwarding entries."""
        async def ready(sw: fy.Switch) -> None:
            await sw.insert(forwarding(routes))

        async def go():
            t = self.target()
            opts = fy.SwitchOptions(p4info=t.p4info, p4blob=t.p4blob, p4force=True, device_id=t.device_id)
            async with fy.Switch("plain", t.address, opts) as sw:
                await ready(sw)
        asyncio.run(go())

    def control(self, fn) -> None:
        """``await fn(switch)`` in a controller session that keeps the running pipeline and its state (e.g. to
        give a link its own parameters at run time: ``BottleneckSwitch.configure_link``)."""
        async def go():
            sw = BottleneckSwitch(self.target(force=False), DesiredState(None, ROUTES, 3))
            async with sw:
                await sw.wait_applied()
                await fn(sw)
        asyncio.run(go())

    def counters(self, counter: str = COUNTER) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) of ``counter`` (class_decision, or link_class_decision)."""
        async def go():
            sw = BottleneckSwitch(self.target(force=False), DesiredState(None, ROUTES, 3))
            async with sw:
                return await sw.read_counters(counter)
        return asyncio.run(go())

    # -- data plane ------------------------------------------------------------------
    def listen(self) -> None:
        for s in self.sniffers.values():
            s.stop()
        self.sniffers = {p: Sniffer(a) for p, (a, _) in self.ifs.items()}
        for s in self.sniffers.values():
            s.start()
        time.sleep(0.2)

    def send(self, frames: list[bytes], port: int = 1, gap_s: float = 0.0) -> None:
        for f in frames:
            self.tx[port].send(f)
            if gap_s:
                time.sleep(gap_s)

    def wait_for(self, records: int, upstream: int, timeout: float = 2.0) -> bool:
        """Until at least ``records`` telemetry frames (port 3) and ``upstream`` frames out of port 1 have been
        seen since ``listen()``, or ``timeout`` s; whether they were."""
        deadline = time.monotonic() + timeout
        while len(self.sniffers[3].frames) < records or len(self.sniffers[1].frames) < upstream:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)
        return True

    def collect(self, expect_records: int, timeout: float = 10.0) -> tuple[dict[int, list[bytes]], list[Record]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.sniffers[3].frames) < expect_records:
            time.sleep(0.05)
        time.sleep(0.3)
        out = {p: list(s.frames) for p, s in self.sniffers.items()}
        records = []
        for f in out[3]:
            try:
                records.append(decode_frame(f))
            except TelemetryError:
                pass
        records.sort(key=lambda r: r.seq)
        return out, records
