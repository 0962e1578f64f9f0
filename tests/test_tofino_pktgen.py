"""The packet generator's ticks (controller/pktgen.py), without a Tofino: the entries it writes are checked
against the SDE's own schema of the generator's tables (controller/pktgen_schema.json, from open-p4studio's
bf_rt_pktgen_tf{1,2}.json; compared with a checkout where OPEN_P4STUDIO gives one), the header the generator
writes is read with the program's tick_h (p4src/tofino/types.p4) as the link, and the period meets every
link's bounds as the twins state them."""

import json
import os
import re
import sys
import types
from pathlib import Path

import pytest

from controller import pktgen
from controller.cli import main as cli_main
from refmodel.constants import Aqm
from refmodel.params import ConfigError, pipeline_params
from refmodel.tofino_iwa import check_hold

ROOT = Path(__file__).resolve().parent.parent
TYPES_P4 = (ROOT / "p4src" / "tofino" / "types.p4").read_text()
TARGETS = ("tofino", "tofino2")


def links(*aqms, **pie):
    return [(i, pipeline_params(2e6, a, limit_bytes=50_000, **({"pie": pie} if a == Aqm.PIE and pie else {})))
            for i, a in enumerate(aqms)]


# --------------------------------------------------------------------------- the entries against the schema


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n, period", [(1, 1_000_000_000), (3, 15_000_000), (16_384, 15_000_000), (65_536, 100_000_000)])
def test_the_writes_fit_the_sdes_schema(target, n, period):
    plan = pktgen.TickPlan(target, n, period, pipes=(0, 1))
    ws = pktgen.writes(plan)
    pktgen.check_writes(target, ws)
    for pipe in (0, 1):   # each pipe's own entries: its buffer, its application enabled last, after its port
        mine = [w for w in ws if w.pipe == pipe]
        assert [w.table.split(".")[-1] for w in mine] == ["pkt_buffer", "app_cfg", "port_cfg", "app_cfg"]
        assert [w.data["app_enable"] for w in mine if w.table.endswith("app_cfg")] == [False, True]
        assert mine[2].key["dev_port"] == pipe << 7 | pktgen.TICK_PORT[target]
        assert mine[-1].data["packets_per_batch_cfg"] == n - 1   # packet_id 0 .. n - 1: one per link
    assert n * plan.ipg_ns <= period // 2                          # the batch ends in the period's first half


@pytest.mark.parametrize("change, says", [
    (lambda w: pktgen.BfrtWrite("tf2.pktgen.app_config", w.key, w.data, w.action), "no such table"),
    (lambda w: pktgen.BfrtWrite(w.table, {"app": 0}, w.data, w.action), "key"),
    (lambda w: pktgen.BfrtWrite(w.table, w.key, {**w.data, "timer_ns": 1}, w.action), "no data field timer_ns"),
    (lambda w: pktgen.BfrtWrite(w.table, w.key, {**w.data, "packets_per_batch_cfg": 1 << 16}, w.action), "16 bits"),
    (lambda w: pktgen.BfrtWrite(w.table, w.key, {**w.data, "app_enable": 1}, w.action), "bool"),
    (lambda w: pktgen.BfrtWrite(w.table, w.key, w.data, "trigger_timer"), "no action"),
    (lambda w: pktgen.BfrtWrite(w.table, {"app_id": 16}, w.data, w.action), "16 applications"),
])
def test_a_write_the_schema_does_not_take_is_refused(change, says):
    ws = pktgen.writes(pktgen.TickPlan("tofino2", 4, 15_000_000))
    app = next(i for i, w in enumerate(ws) if w.table.endswith("app_cfg"))
    ws[app] = change(ws[app])
    with pytest.raises(ValueError, match=says):
        pktgen.check_writes("tofino2", ws)


def test_tofino_1_names_its_tables_tf1_and_has_8_applications():
    ws = pktgen.writes(pktgen.TickPlan("tofino", 4, 15_000_000, app_id=7))
    pktgen.check_writes("tofino", ws)
    assert {w.table.split(".")[0] for w in ws} == {"tf1"}
    with pytest.raises(ValueError, match="8 applications"):
        pktgen.check_writes("tofino", pktgen.writes(pktgen.TickPlan("tofino", 4, 15_000_000, app_id=8)))
    with pytest.raises(ValueError, match="no such table"):
        pktgen.check_writes("tofino2", ws)


def test_the_committed_schema_is_the_sdes():
    root = os.environ.get("OPEN_P4STUDIO")
    if not root:
        pytest.skip("OPEN_P4STUDIO (an open-p4studio checkout) not given: the committed schema is not compared")
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import pktgen_schema
    finally:
        sys.path.pop(0)
    fresh = pktgen_schema.extract(Path(root))
    committed = pktgen.load_schema()
    assert {t: fresh[t] for t in TARGETS} == {t: committed[t] for t in TARGETS}


# --------------------------------------------------------------------------- the tick as the program reads it


def tick_h_fields() -> list[tuple[str, int]]:
    """tick_h's fields, in order, with their widths, from p4src/tofino/types.p4."""
    body = re.search(r"header tick_h \{(.*?)\}", TYPES_P4, re.S).group(1)
    return [(name, int(bits)) for bits, name in re.findall(r"bit<(\d+)>\s+(\w+);", body)]


def read_tick_h(frame: bytes) -> dict[str, int]:
    fields, value, total = tick_h_fields(), int.from_bytes(frame[:pktgen.HEADER_BYTES], "big"), 0
    out = {}
    for name, bits in fields:
        total += bits
        out[name] = (value >> (8 * pktgen.HEADER_BYTES - total)) & ((1 << bits) - 1)
    assert total == 8 * pktgen.HEADER_BYTES, "tick_h is not the generator's 6 bytes"
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("link", [0, 1, 255, 256, 16_383, 65_535])
def test_the_program_reads_the_generators_packet_id_as_the_link(target, link):
    frame = pktgen.tick_header(target, pipe=1, app_id=3, batch_id=0, packet_id=link) + pktgen.tick_buffer()
    assert len(frame) == pktgen.FRAME_BYTES
    h = read_tick_h(frame)
    assert h["packet_id"] == link and h["batch_id"] == 0
    if target == "tofino":   # tick_h is Tofino 1's layout; on Tofino 2 only its first byte's split differs
        assert (h["pipe_id"], h["app_id"]) == (1, 3)


ARCH_INCLUDE = [Path(os.environ.get("BF_P4C_INCLUDE", "/opt/p4/tofino/share/p4c/p4include"))]


@pytest.mark.parametrize("target, base", [("tofino", "tofino1_base.p4"), ("tofino2", "tofino2_base.p4")])
def test_the_generators_header_is_the_architectures(target, base):
    """FIRST_BYTE_BITS and the header's 6 bytes against the architecture's own pktgen_timer_header_t (bf-p4c's
    p4include, where the toolchain installed it or BF_P4C_INCLUDE names it)."""
    path = ARCH_INCLUDE[0] / base
    if not path.is_file():
        pytest.skip(f"{path}: not here (make toolchain TOFINO=1 installs bf-p4c's p4include)")
    body = re.search(r"header pktgen_timer_header_t \{(.*?)\}", path.read_text(), re.S).group(1)
    widths = [int(w) for w in re.findall(r"bit<(\d+)>", body)]
    assert widths[:3] == list(pktgen.FIRST_BYTE_BITS[target]) and sum(widths) == 8 * pktgen.HEADER_BYTES
    assert re.findall(r"bit<\d+>\s+(\w+);", body)[-2:] == ["batch_id", "packet_id"]


def test_the_generators_port_is_the_programs():
    t2, t1 = re.search(r"#if __TARGET_TOFINO__ == 2\s*#define TICK_PORT (\d+)\s*#else\s*#define TICK_PORT (\d+)",
                       TYPES_P4).groups()
    assert pktgen.TICK_PORT == {"tofino2": int(t2), "tofino": int(t1)}


# --------------------------------------------------------------------------- the period


def test_the_period_is_the_longest_every_link_allows():
    assert pktgen.tick_period(links(Aqm.FIFO, Aqm.CODEL)) == 1_000_000_000
    assert pktgen.tick_period(links(Aqm.RED)) == 1_000_000_000
    iwa = pktgen.tick_period(links(Aqm.CODEL, Aqm.IWA))
    assert iwa == 100_000_000
    hold = pipeline_params(2e6, Aqm.IWA).iwa.hold_ns
    check_hold(hold)
    assert 2 * hold + iwa < 1 << 31   # IWA's epoch is a 32-bit serial time: two holds and a tick period
    assert pktgen.tick_period(links(Aqm.IWA, Aqm.PIE, tupdate_s=0.015)) == 15_000_000   # PIE's tupdate, exactly
    assert pktgen.tick_period(links(Aqm.CODEL), 20_000_000) == 20_000_000


def test_links_that_need_different_periods_cannot_share_a_pipe():
    a = links(Aqm.PIE, tupdate_s=0.015)
    b = [(1, pipeline_params(2e6, Aqm.PIE, limit_bytes=50_000, pie={"tupdate_s": 0.030}))]
    with pytest.raises(ConfigError, match=r"link 1 \(pie\).*links before it \(0\)"):
        pktgen.tick_period(a + b)
    with pytest.raises(ConfigError, match="link 1 \\(pie\\)"):
        pktgen.tick_period(links(Aqm.IWA, Aqm.PIE, tupdate_s=0.2))   # beyond IWA's 100 ms
    with pytest.raises(ConfigError, match="outside"):
        pktgen.tick_period(links(Aqm.IWA), 200_000_000)


def test_pipes_beyond_the_chips_are_refused():
    for pipes in ((4,), (0, 0), ()):
        with pytest.raises(ConfigError, match="pipes"):
            pktgen.TickPlan("tofino2", 4, 15_000_000, pipes=pipes)


def test_too_many_ticks_for_the_period_are_refused():
    with pytest.raises(ConfigError, match="packet_id"):
        pktgen.TickPlan("tofino2", 65_537, 100_000_000)
    with pytest.raises(ConfigError, match="no gap"):
        pktgen.TickPlan("tofino2", 16_384, 16_384)


# --------------------------------------------------------------------------- sending them


class FakeBfrt:
    """bfrt_grpc.client's calls as controller/pktgen.install makes them, checked against the schema (the real
    client refuses a field its BF-Runtime info does not have in make_key/make_data): a unit test of install."""

    def __init__(self, target: str):
        self.tables = pktgen.load_schema()[target]
        self.mods: list = []
        fake = self

        class Table:
            def __init__(self, name):
                self.name, self.s = name, fake.tables[name]

            def make_key(self, kts):
                assert {k.name for k in kts} == set(self.s["keys"])
                return {k.name: k.value for k in kts}

            def make_data(self, dts, action=None):
                fields = {**self.s["data"], **(self.s["actions"][action] if action else {})}
                for d in dts:
                    assert d.name in fields, d.name
                    assert (fields[d.name]["type"] == "bool") == (d.bool_val is not None), d.name
                return action, {d.name: d.bool_val if d.bool_val is not None else d.value for d in dts}

            def entry_mod(self, target, keys, datas):
                fake.mods.append((target.pipe_id, self.name, keys[0], datas[0]))

        class Info:
            def table_get(self, name):
                return Table(name)

        class Interface:
            def __init__(self, address, client_id, device_id):
                fake.address, fake.torn_down = address, False

            def bind_pipeline_config(self, program):
                fake.program = program

            def bfrt_info_get(self, program):
                return Info()

            def tear_down_stream(self):
                fake.torn_down = True

        def tuple_(name, value=None, bool_val=None):
            return types.SimpleNamespace(name=name, value=value, bool_val=bool_val)

        self.module = types.SimpleNamespace(
            ClientInterface=Interface, KeyTuple=lambda name, value: types.SimpleNamespace(name=name, value=value),
            DataTuple=tuple_, Target=lambda device_id, pipe_id: types.SimpleNamespace(pipe_id=pipe_id))


def test_install_sends_every_write_to_every_pipe(monkeypatch):
    fake = FakeBfrt("tofino2")
    pkg = types.ModuleType("bfrt_grpc")
    pkg.client = fake.module
    monkeypatch.setitem(sys.modules, "bfrt_grpc", pkg)
    monkeypatch.setitem(sys.modules, "bfrt_grpc.client", fake.module)
    ws = pktgen.writes(pktgen.TickPlan("tofino2", 8, 15_000_000, pipes=(0, 1)))
    pktgen.install(ws, "sw:50052", "bottleneck_tna")
    assert fake.program == "bottleneck_tna" and fake.torn_down
    assert [(p, t, k) for p, t, k, _ in fake.mods] == [(w.pipe, w.table, w.key) for w in ws]
    assert {p for p, *_ in fake.mods} == {0, 1}   # each pipe's own, none to every pipe
    buf = next(d for _, t, _, d in fake.mods if t.endswith("pkt_buffer"))
    assert buf[1]["buffer"] == bytearray(pktgen.tick_buffer())
    assert fake.mods[-1][3] == ("trigger_timer_periodic", {**ws[-1].data})


def test_install_without_the_sdes_client_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "bfrt_grpc", None)
    with pytest.raises(ConfigError, match="bfrt_grpc"):
        pktgen.install([], "sw:50052", "bottleneck_tna")


def test_the_command_prints_checked_writes_and_refuses_mixed_periods(tmp_path, capsys):
    cfg = tmp_path / "lab.toml"
    cfg.write_text('[link]\nrate_bps = 2e6\n[aqm]\nname = "codel"\n'
                   '[links.1]\nclients = ["10.0.1.2"]\n[links.1.aqm]\nname = "pie"\n'
                   '[links.2]\nclients = ["10.0.2.2"]\n[links.2.aqm]\nname = "iwa"\n')
    assert cli_main(["pktgen", "--config", str(cfg), "--target", "tofino2", "--pipes", "0,2",
                     "--p4info", str(ROOT / "controller" / "p4info" / "tofino2.p4info.txtpb")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# 3 links, a tick each every 15000000 ns")
    ws = [json.loads(x) for x in lines[1:]]
    assert [(w["pipe"], w["table"]) for w in ws] == [
        (p, f"tf2.pktgen.{t}") for p in (0, 2) for t in ("pkt_buffer", "app_cfg", "port_cfg", "app_cfg")]
    assert ws[-1]["data"]["timer_nanosec"] == 15_000_000 and ws[-1]["data"]["packets_per_batch_cfg"] == 2
    cfg.write_text(cfg.read_text() + '[links.1.aqm.pie]\ntupdate_s = 0.030\n'
                   '[links.3]\nclients = ["10.0.3.2"]\n[links.3.aqm]\nname = "pie"\n')
    assert cli_main(["pktgen", "--config", str(cfg), "--target", "tofino2"]) == 2
    assert "cannot share a pipe" in capsys.readouterr().err
    assert cli_main(["pktgen", "--config", str(cfg), "--target", "tofino2", "--p4info", str(tmp_path / "no")]) == 2
    assert "no such file" in capsys.readouterr().err
