"""The controller's command line against a real simple_switch_grpc (skipped without the P4 toolchain).

Install and configure each AQM, read counters after Scapy traffic, keep tuning
across a switch restart, leave a defined state on Ctrl-C, and refuse bad
configurations before anything is written.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import finsy as fy
import pytest

from accessnet.bmv2_veth import ROUTES, Bmv2, build_p4, missing_toolchain
from controller import entries
from controller.config import params_from_dict
from controller.switch import BottleneckSwitch, DesiredState, _insert_or_modify
from refmodel.constants import Aqm, TrafficClass
from tests.frames import audio, tcp

ROOT = Path(__file__).resolve().parent.parent
why = missing_toolchain()
pytestmark = pytest.mark.skipif(why is not None, reason=why or "")

CONFIGS = {
    "fifo": '[aqm]\nname = "fifo"\n',
    "red": '[aqm]\nname = "red"\n[aqm.red]\nw_q = 0.002\nmax_p = 0.1\nth_min = 5\nth_max = 20\n',
    "codel": '[aqm]\nname = "codel"\n[aqm.codel]\ntarget_s = 0.005\ninterval_s = 0.1\n',
    "pie": '[aqm]\nname = "pie"\n',
    "iwa": '[aqm]\nname = "iwa"\n[aqm.iwa]\ntarget_s = 0.010\n',
}
LINK = '[link]\nrate_bps = 2e6\n[buffer]\npackets = 48\n'


@pytest.fixture(scope="module")
def compiled():
    build_p4()


@pytest.fixture
def sw(compiled):
    s = Bmv2(k=1).start()
    yield s
    s.close()


def cli(sw: Bmv2, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controller", *args, "--address", sw.address,
                           "--p4info", "build/bottleneck.p4info.txtpb", "--p4blob", "build/bottleneck.json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def write_cfg(tmp_path: Path, aqm: str) -> Path:
    p = tmp_path / f"{aqm}.toml"
    p.write_text(LINK + CONFIGS[aqm])
    return p


def aqm_seen(sw: Bmv2, n: int = 3) -> set[int]:
    """Send audio frames through the switch; the AQM field of their telemetry records."""
    sw.listen()
    sw.send([audio(i) for i in range(n)])
    _, records = sw.collect(n)
    assert len(records) == n
    return {r.aqm for r in records}


def read_default(sw: Bmv2, table: str) -> dict:
    async def go():
        b = BottleneckSwitch(sw.target(force=False), DesiredState(None, ROUTES, 3))
        async with b:
            async for e in b.sw.read(fy.P4TableEntry(table, is_default_action=True)):
                return {k: v for k, v in e.action.args.items()}
    return asyncio.run(go())


def test_install_then_set_each_aqm_at_run_time(sw, tmp_path):
    r = cli(sw, "install", "--config", str(write_cfg(tmp_path, "fifo")))
    assert r.returncode == 0, r.stderr
    assert aqm_seen(sw) == {Aqm.FIFO}
    for name in ("red", "codel", "pie", "iwa"):
        r = cli(sw, "set-aqm", name, "--config", str(write_cfg(tmp_path, name)))
        assert r.returncode == 0, r.stderr
        assert f"aqm={name}" in r.stdout
        assert aqm_seen(sw) == {Aqm[name.upper()]}, name
    iwa = read_default(sw, "iwa_cfg")
    # the rate conversions: rate class tables
    assert set(iwa) == {"target_ns", "mss_bytes", "hold_ns", "age_ns", "floor_cap_ns", "budget_cap_ns"}
    assert (iwa["target_ns"], iwa["mss_bytes"], iwa["hold_ns"]) == (10_000_000, 1460, 1_000_000_000)
    p = params_from_dict(tomllib.loads(write_cfg(tmp_path, "iwa").read_text()))
    assert iwa["floor_cap_ns"] == p.iwa.floor_cap_ns == p.queue.limit_pkts * p.queue.mtu_ns // 4  # its buffer's
    assert read_default(sw, "codel_cfg")["target_ns"] == 10_000_000  # iwa's CoDel: IWA's own target


def test_a_clone_session_already_there_is_modified_not_refused(sw, tmp_path):
    """BMv2 now and then keeps the telemetry clone session through delete_all, and a second controller
    process's insert then failed with 'Clone session id already exists' (seen in CI). Writing it twice in a row
    must succeed and leave the session as configured."""
    assert cli(sw, "install", "--config", str(write_cfg(tmp_path, "fifo"))).returncode == 0

    async def go():
        b = BottleneckSwitch(sw.target(force=False), DesiredState(None, ROUTES, 3))
        async with b:
            for _ in range(2):  # the second insert finds it there
                await _insert_or_modify(b.sw, entries.telemetry_session(3))
    asyncio.run(go())
    assert aqm_seen(sw) == {Aqm.FIFO}  # still cloning telemetry to the monitor port


def test_counters_after_scapy_traffic(sw, tmp_path):
    assert cli(sw, "install", "--config", str(write_cfg(tmp_path, "iwa"))).returncode == 0
    sw.listen()
    sw.send([audio(i) for i in range(7)] + [tcp(i, payload=100) for i in range(3)])
    sw.collect(10)
    r = cli(sw, "counters")
    assert r.returncode == 0, r.stderr
    rows = {tuple(line.split()[:2]): int(line.split()[2]) for line in r.stdout.splitlines()[1:]}
    assert rows[(TrafficClass.UDP.name, "PASS")] == 7
    assert sum(n for (cls, _), n in rows.items() if cls.startswith("TCP")) == 3


@pytest.mark.parametrize("bad, field", [
    ('[link]\nrate_bps = -5\n[aqm]\nname = "fifo"\n', "rate_bps"),
    (LINK + '[aqm]\nname = "blue"\n', "aqm"),
    (LINK + '[aqm]\nname = "red"\n[aqm.red]\nw_q = 0.002\nmax_p = 0.1\nth_min = 20\nth_max = 5\n', "th_min"),
    (LINK + '[aqm]\nname = "iwa"\n[aqm.iwa]\nmtu_bytes = 99999\n', "mtu_bytes"),
])
def test_bad_configs_are_refused_before_anything_is_written(sw, tmp_path, bad, field):
    p = tmp_path / "bad.toml"
    p.write_text(bad)
    for cmd in ("install", "tune"):
        r = cli(sw, cmd, "--config", str(p))
        assert r.returncode == 2 and "config error" in r.stderr and field in r.stderr, (cmd, r.stderr)
    # nothing reached the switch: it still has no pipeline, so it forwards nothing
    sw.listen()
    sw.send([audio(0)])
    out, records = sw.collect(1, timeout=1.0)
    assert records == [] and out[2] == []


def test_unreachable_switch_is_reported_after_backoff(tmp_path):
    r = subprocess.run([sys.executable, "-m", "controller", "install", "--config", str(write_cfg(tmp_path, "fifo")),
                        "--address", "127.0.0.1:1", "--attempts", "2"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 3 and "unreachable after 2 attempts" in r.stderr


def test_tuner_survives_a_switch_restart_and_leaves_a_defined_state(sw, tmp_path):
    log = tmp_path / "tuning.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller", "-v", "tune", "--config", str(write_cfg(tmp_path, "iwa")),
         "--address", sw.address, "--monitor-if", sw.ifs[3][0], "--log", str(log),
         "--p4info", "build/bottleneck.p4info.txtpb", "--p4blob", "build/bottleneck.json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()

    def wait_for(text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in lines):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.1)

    try:
        wait_for("installed: aqm=iwa")
        time.sleep(2.0)  # the loop sets the target from the 40 ms budget: 40 ms - 2 frames at 2 Mbit/s
        tuned = read_default(sw, "iwa_cfg")["target_ns"]
        assert tuned == 27_888_000 != 10_000_000
        sw.restart()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if aqm_seen(sw, 2) == {Aqm.IWA}:
                    break
            except AssertionError:
                time.sleep(0.5)
        else:
            pytest.fail("the switch was not re-configured after its restart:\n" + "".join(lines))
        assert read_default(sw, "iwa_cfg")["target_ns"] == tuned  # the tuned state, not the initial one
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        reader.join(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = "".join(lines)
    assert proc.returncode == 0, out
    assert "re-applied pipeline and state" in out
    assert "leaving the switch with the configured parameters" in out
    assert read_default(sw, "iwa_cfg")["target_ns"] == 10_000_000  # Ctrl-C: back to the configuration
    assert len(log.read_text().splitlines()) > 20


SERVER_NAME = "bmv2.iwlab.test"  # given with --tls-server-name: gRPC names a unix: address after its path


def make_certs(d: Path) -> None:
    """A throw-away CA, a server certificate for the name ``SERVER_NAME`` and a client certificate (openssl)."""
    def ossl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
         "-subj", "/CN=iwlab test CA")
    (d / "san.cnf").write_text(f"subjectAltName=DNS:{SERVER_NAME}\n")
    for name in ("server", "client"):
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN=iwlab {name}")
        ossl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "1", "-extfile", "san.cnf")


def test_mutual_tls(compiled, tmp_path):
    make_certs(tmp_path)
    tls = ["--grpc-server-ssl", "--grpc-server-cacert", str(tmp_path / "ca.pem"), "--grpc-server-cert",
           str(tmp_path / "server.pem"), "--grpc-server-key", str(tmp_path / "server.key"),
           "--grpc-server-with-client-auth"]
    sw = Bmv2(k=2, grpc_args=tls).start()
    try:
        cfg = str(write_cfg(tmp_path, "iwa"))
        plain = cli(sw, "install", "--config", cfg, "--attempts", "2")
        assert plain.returncode == 3, "a client without TLS must not get in"
        no_cert = cli(sw, "install", "--config", cfg, "--attempts", "2", "--tls-ca", str(tmp_path / "ca.pem"),
                      "--tls-server-name", SERVER_NAME)
        assert no_cert.returncode == 3, "a client without a certificate must not get in"
        ok = cli(sw, "install", "--config", cfg, "--tls-ca", str(tmp_path / "ca.pem"), "--tls-server-name", SERVER_NAME,
                 "--tls-cert", str(tmp_path / "client.pem"), "--tls-key", str(tmp_path / "client.key"))
        assert ok.returncode == 0, ok.stderr
        assert aqm_seen(sw) == {Aqm.IWA}
    finally:
        sw.close()


def test_install_with_links_sections_and_count_per_link(sw, tmp_path):
    """[links.N] in the configuration: the link's clients in link_of, its own parameters keyed by the link,
    and `counters --link N` reads that link's counters only."""
    f = tmp_path / "links.toml"
    f.write_text(LINK + '[aqm]\nname = "fifo"\n[links.1]\nclients = ["10.0.1.2"]\n[links.1.aqm]\nname = "codel"\n')
    r = cli(sw, "install", "--config", str(f))
    assert r.returncode == 0, r.stderr
    assert "link 1: aqm=codel, 1 clients mapped" in r.stdout

    async def read(table):
        b = BottleneckSwitch(sw.target(force=False), DesiredState(None, ROUTES, 3))
        async with b:
            return [e async for e in b.sw.read(fy.P4TableEntry(table))]
    (cfg,) = asyncio.run(read("bottleneck_cfg"))
    assert cfg.match["link"] == 1 and cfg.action.args["aqm"] == Aqm.CODEL
    (client,) = asyncio.run(read("link_of"))
    assert client.match["client_addr"] == 0x0A000102 and client.action.args["link"] == 1
    sw.listen()
    sw.send([tcp(i, payload=100, dst="10.0.1.2") for i in range(4)] + [audio(i) for i in range(3)])
    sw.collect(7)
    rows = {}
    r = cli(sw, "counters", "--link", "1")
    assert r.returncode == 0, r.stderr
    assert "(link 1)" in r.stdout.splitlines()[0]
    for line in r.stdout.splitlines()[1:]:
        rows[tuple(line.split()[:2])] = int(line.split()[2])
    assert sum(rows.values()) == 4 and all(cls.startswith("TCP") for cls, _ in rows)  # the audio is link 0's


def test_tune_runs_a_loop_per_link_with_parameters_of_its_own(sw, tmp_path):
    """`tune` with [links.1] at another rate: link 1's own iwa_cfg entry gets the policy's target for its rate
    while the defaults get theirs, link 1's rows go to tuning-link1.csv, and Ctrl-C restores both."""
    from controller import policy
    f = tmp_path / "links.toml"
    f.write_text(LINK + CONFIGS["iwa"] + '[links.1]\nclients = ["10.0.1.2"]\n[links.1.link]\nrate_bps = 1e6\n')
    log = tmp_path / "tuning.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller", "tune", "--config", str(f), "--address", sw.address,
         "--monitor-if", sw.ifs[3][0], "--log", str(log),
         "--p4info", "build/bottleneck.p4info.txtpb", "--p4blob", "build/bottleneck.json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def link_target(link: int) -> int:
        async def go():
            b = BottleneckSwitch(sw.target(force=False), DesiredState(None, ROUTES, 3))
            async with b:
                return [e.action.args["target_ns"] async for e in b.sw.read(fy.P4TableEntry("iwa_cfg"))
                        if e.match["link"] == link]
        (target,) = asyncio.run(go())
        return target

    try:
        deadline = time.monotonic() + 30
        while not log.exists() or len(log.read_text().splitlines()) < 15:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.2)
        assert read_default(sw, "iwa_cfg")["target_ns"] == policy.target_for(2e6, 40 * 10**6)
        assert link_target(1) == policy.target_for(1e6, 40 * 10**6) != policy.target_for(2e6, 40 * 10**6)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "link 1: aqm=iwa" in out
    assert read_default(sw, "iwa_cfg")["target_ns"] == link_target(1) == 10_000_000  # both as configured
    rows = (tmp_path / "tuning-link1.csv").read_text().splitlines()
    assert len(rows) > 10 and all(r.split(",")[1] == "1000000" for r in rows[1:])
