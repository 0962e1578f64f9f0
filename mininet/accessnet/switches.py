"""The bottleneck switch of a run, in one of three kinds (same ports, same drain shaper):

* ``Bmv2Switch``: ``simple_switch_grpc`` running ``p4src/bottleneck.p4``,
  configured by the P4Runtime controller (``python -m controller``);
* ``ModelSwitch``: the reference model as a userspace forwarder
  (``python -m accessnet.modelswitch``), for machines without BMv2;
* ``KernelSwitch``: a Linux bridge with a kernel qdisc under the tbf, for the
  kernel AQM peers on identical traffic.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from .topology import ROOT, AccessNet

P4_PREFIX_DEFAULT = "/opt/p4"
# The switch process runs at a real-time priority, below the delay lines (30, they are the wire) and
# above the audio endpoints (10): packets must not wait for the CPU where the model does not expect it.
REALTIME = ["chrt", "-r", "20"]


def find_p4_tool(name: str) -> str | None:
    import os
    return shutil.which(name) or shutil.which(name, path=os.path.join(os.environ.get("P4_PREFIX", P4_PREFIX_DEFAULT),
                                                                        "bin"))


def bmv2_available() -> bool:
    return bool(find_p4_tool("simple_switch_grpc")) and (ROOT / "build" / "bottleneck.json").exists()


def wait_port(port: int, timeout: float = 15.0, alive=lambda: True) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError("switch process exited during start-up")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


class Switch:
    kind = "?"

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self, net: AccessNet, cfg: dict, rundir: Path) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        return self.proc is None or self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Bmv2Switch(Switch):
    kind = "bmv2"

    def __init__(self, slot: int = 0) -> None:
        super().__init__()
        self.grpc_port = 9559 + 10 * slot
        self.thrift_port = 9090 + 10 * slot

    def start(self, net: AccessNet, cfg: dict, rundir: Path) -> None:
        exe = find_p4_tool("simple_switch_grpc")
        log = open(rundir / "switch.log", "wb")
        self.proc = subprocess.Popen(
            [*REALTIME, exe, "--device-id", "1", *net.ports.bmv2_args(), "--thrift-port", str(self.thrift_port), "--no-p4",
             "--", "--grpc-server-addr", f"127.0.0.1:{self.grpc_port}"],
            stdout=log, stderr=subprocess.STDOUT)
        wait_port(self.grpc_port, alive=self.alive)
        cfg_path = rundir / "switch.json"
        cfg_path.write_text(json.dumps(cfg, indent=1))
        with open(rundir / "controller.log", "ab") as clog:
            subprocess.run(
                [sys.executable, "-m", "controller", "-v", "install", "--config", str(cfg_path),
                 "--address", f"127.0.0.1:{self.grpc_port}", "--monitor-port", "3",
                 "--p4info", str(ROOT / "build" / "bottleneck.p4info.txtpb"),
                 "--p4blob", str(ROOT / "build" / "bottleneck.json")],
                stdout=clog, stderr=subprocess.STDOUT, check=True, timeout=120, cwd=ROOT)
        self._queue_depth()

    def _queue_depth(self) -> None:
        """BMv2's own egress queue must add no drops: make it deep (its rate is unlimited by default)."""
        cli = find_p4_tool("simple_switch_CLI")
        if cli:
            subprocess.run(["/usr/bin/python3", cli, "--thrift-port", str(self.thrift_port)],
                           input=b"set_queue_depth 16384\n", capture_output=True, timeout=30)


class ModelSwitch(Switch):
    kind = "model"

    def __init__(self, seed: int = 1) -> None:
        super().__init__()
        self.seed = seed

    def start(self, net: AccessNet, cfg: dict, rundir: Path) -> None:
        cfg_path = rundir / "switch.json"
        cfg_path.write_text(json.dumps(cfg, indent=1))
        log = open(rundir / "switch.log", "wb")
        self.proc = subprocess.Popen(
            [*REALTIME, sys.executable, "-m", "accessnet.modelswitch", "--if", f"1={net.ports.server}",
             "--if", f"2={net.ports.client}", "--monitor", net.ports.monitor, "--config", str(cfg_path),
             "--seed", str(self.seed)], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        time.sleep(0.5)
        if not self.alive():
            raise RuntimeError(f"model switch exited at start: see {rundir / 'switch.log'}")


KERNEL_QDISCS = {
    "pfifo": lambda buf: f"pfifo limit {buf.get('packets', 1000)}",
    "kred": lambda buf: "red limit 400000 min 30000 max 90000 avpkt 1500 burst 55 bandwidth 2mbit",
    "kcodel": lambda buf: f"codel limit {buf.get('packets', 1000)}",
    "kfq_codel": lambda buf: f"fq_codel limit {buf.get('packets', 1000)}",
    "kpie": lambda buf: f"pie limit {buf.get('packets', 1000)}",
}


class KernelSwitch(Switch):
    kind = "kernel"

    def __init__(self, qdisc: str, buffer: dict) -> None:
        super().__init__()
        self.qdisc = KERNEL_QDISCS[qdisc](buffer)

    def start(self, net: AccessNet, cfg: dict, rundir: Path) -> None:
        net.kernel_aqm(self.qdisc)
        (rundir / "switch.log").write_text(f"linux bridge, qdisc under tbf: {self.qdisc}\n")
