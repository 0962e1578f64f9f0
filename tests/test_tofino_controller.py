"""The controller's side of the TNA program (controller/tofino.py, controller/stratum.py), without a
Tofino: every entry it writes is encoded against the TNA P4Info that `make build TARGET=tofino|tofino2`
keeps in controller/p4info/, so a renamed table, key or parameter, or a value too wide, fails here even
where no compiler is installed."""

import re
from dataclasses import replace
from pathlib import Path

import finsy as fy
import pytest
from google.protobuf import empty_pb2, unknown_fields

from controller import stratum, tna_p4info, tofino
from refmodel.tofino_pie import scale_rows
from refmodel import arith
from refmodel.constants import Aqm
from refmodel.params import ConfigError, byte_time_q16, pipeline_params
from refmodel.pipeline import Route
from refmodel.queue import tx_ns
from refmodel.tofino_queue import link_limit_ns
from refmodel.tofino_red import tna_red_config

ROOT = Path(__file__).resolve().parent.parent
P4INFO = {t: ROOT / "controller" / "p4info" / f"{t}.p4info.txtpb" for t in ("tofino", "tofino2", "tofino2-red")}
PROGRAM = (ROOT / "p4src" / "tofino" / "bottleneck_tna.p4").read_text()
ROUTES = {1: Route(2, True), 2: Route(1, False)}


def schema(target: str) -> fy.P4Schema:
    path = P4INFO[target]
    assert path.is_file(), f"{path} is missing: `make build TARGET={target}` writes it (commit it)"
    return fy.P4Schema(tna_p4info.load(path))


def two_links():
    return [tofino.AccessLink(0, None, pipeline_params(2e6, Aqm.CODEL, limit_bytes=50_000)),
            tofino.AccessLink(1, "10.0.1.2", pipeline_params(10e6, Aqm.FIFO, limit_bytes=200_000)),
            tofino.AccessLink(7, "10.0.1.3", pipeline_params(2e6, Aqm.FIFO, limit_bytes=50_000))]


HSPA_RED = dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20)   # the seeds' RED on HSPA


def red_link(link=9, client="10.0.1.9", **red):
    """A RED link: the seeds' RED on HSPA unless ``red`` says otherwise."""
    row = red or HSPA_RED
    return tofino.AccessLink(link, client, pipeline_params(2e6, Aqm.RED, limit_pkts=48, red=row))


def pie_link(link=8, client="10.0.1.8", **pie):
    return tofino.AccessLink(link, client, pipeline_params(5e6, Aqm.PIE, limit_bytes=100_000, pie=pie or None))


@pytest.mark.parametrize("target", ["tofino", "tofino2", "tofino2-red"])
def test_every_entry_encodes_against_the_tna_p4info(target):
    s = schema(target)
    n = tofino.n_links(s.p4info)
    assert n >= 2 ** 12  # tens of thousands is the aim (docs/tofino.md); a toy size would be a mistake
    codel, pie, red = tofino.has_codel(s.p4info), tofino.has_pie(s.p4info), tofino.has_red(s.p4info)
    # Tofino 1's 12 stages hold the queue alone; Tofino 2 holds it with CoDel and PIE, or with RED (bottleneck_tna.p4)
    assert (codel, pie, red) == {"tofino": (False, False, False), "tofino2": (True, True, False),
                                 "tofino2-red": (False, False, True)}[target]
    fifo = [replace(lk, params=replace(lk.params, queue=replace(lk.params.queue, aqm=Aqm.FIFO))) for lk in two_links()]
    links = (two_links() if codel else fifo) + ([pie_link()] if pie else []) + ([red_link()] if red else [])
    ents = tofino.all_entries(ROUTES, links, n, codel, pie, red)
    bulk = {"red_rest", *tofino.RED_EXP_TABLES}   # 2^15 rows each: every 61st row is encoded
    for i, e in enumerate(ents + [tofino.link_of_default(links)]):
        if e.table_id not in bulk or i % 61 == 0 or e.match[next(iter(e.match))] >= (1 << 15) - 1:
            e.encode(s)  # raises on an unknown name or a value its field cannot hold
    tofino.telemetry_session(3).encode(s)
    names = {e.table_id for e in ents}
    assert names == {"forward", "link_of", "link_cfg", "tx_time_hi", "tx_time_lo"} | (
        {"codel_cfg", "codel_law"} if codel else set()) | (
        {"pie_cfg", "pie_scale", "pie_term_a", "pie_term_b"} if pie else set()) | (
        {"red_cfg", "red_rest", *tofino.RED_EXP_TABLES} if red else set())


@pytest.mark.parametrize("target", ["tofino", "tofino2", "tofino2-red"])
def test_a_renamed_parameter_fails_the_encoding(target):
    s = schema(target)
    bad = fy.P4TableEntry("link_cfg", match=fy.P4TableMatch(link=0),
                          action=fy.P4TableAction("set_link_cfg", aqm=0, ecn=0, telemetry=0,
                                                  bucket_ns=0, limit_bytes=0, mtu_ns=0))
    with pytest.raises(ValueError):
        bad.encode(s)
    too_wide = fy.P4TableEntry("link_of", match=fy.P4TableMatch(client=0x0A000102),
                               action=fy.P4TableAction("set_link", link=1 << 16, rate_class=0))
    with pytest.raises(ValueError):
        too_wide.encode(s)


@pytest.mark.parametrize("telemetry,want", [("all", 1), ("off", 0)])
def test_a_link_reports_every_packet_or_none_and_datagrams_only_is_refused(telemetry, want):
    """link.p4's set_link_cfg takes one bit: all or off; the BMv2 program's "datagrams" is refused, naming both."""
    lk = tofino.AccessLink(3, "10.0.1.4", pipeline_params(2e6, Aqm.FIFO, limit_bytes=50_000, telemetry=telemetry))
    (cfg,) = [e for e in tofino.link_entries(lk, 0, 8) if e.table_id == "link_cfg"]
    assert cfg.action.args["telemetry"] == want
    lk = tofino.AccessLink(3, "10.0.1.4", pipeline_params(2e6, Aqm.FIFO, limit_bytes=50_000, telemetry="datagrams"))
    with pytest.raises(ConfigError, match="link 3: telemetry = 'datagrams': the TNA program reports every packet or "
                                          "none"):
        tofino.link_entries(lk, 0, 8)


def test_iwa_is_refused_while_the_tna_program_cannot_shape():
    lk = tofino.AccessLink(2, "10.0.1.3", pipeline_params(2e6, Aqm.IWA, limit_bytes=50_000))
    with pytest.raises(ConfigError, match="link 2: iwa cannot be installed on a Tofino yet: .* shapes no window"):
        tofino.link_entries(lk, 0, 8, law=0)


def test_links_of_one_rate_share_a_rate_class_and_its_tables():
    links = two_links()
    classes = tofino.rate_classes(links)
    assert classes == {byte_time_q16(2e6): 0, byte_time_q16(10e6): 1}
    ents = tofino.all_entries(ROUTES, links, 2 ** 14, codel=True)
    per_class = arith.TX_HI_ENTRIES + arith.TX_LO_ENTRIES
    assert sum(e.table_id.startswith("tx_time") for e in ents) == 2 * per_class
    clients = [e for e in ents if e.table_id == "link_of"]
    assert [(e.match["client"], e.action.args["link"], e.action.args["rate_class"]) for e in clients] == [
        (0x0A000102, 1, 1), (0x0A000103, 7, 0)]
    assert [e.match["link"] for e in ents if e.table_id == "link_cfg"] == [0, 1, 7]
    # link 0 has no client: it is link_of's default, with its rate class
    d = tofino.link_of_default(links)
    assert d.is_default_action and d.action.args == {"link": 0, "rate_class": 0}


def test_the_tx_entries_hold_the_split_tables():
    bt = byte_time_q16(2e6)
    ents = tofino.tx_entries(bt, 3)
    split = arith.tx_split(bt)
    hi = {e.match["len_hi"]: e.action.args["ns"] for e in ents if e.table_id == "tx_time_hi"}
    assert hi == dict(enumerate(split.hi))
    assert {e.match["rate_class"] for e in ents} == {3}


def test_a_packet_limit_becomes_the_byte_limit_it_equals_for_full_frames(caplog):
    p = pipeline_params(2e6, Aqm.FIFO, limit_pkts=48)
    ents = tofino.all_entries(ROUTES, [tofino.AccessLink(0, None, p)], 2 ** 14)
    cfg = [e for e in ents if e.table_id == "link_cfg"][0].action.args
    tx = tx_ns(p.queue.byte_time_q16, 1514)
    assert cfg["limit_ns"] == 48 * tx + p.queue.bucket_ns == link_limit_ns(p.queue)
    assert "48 packets becomes" in caplog.text   # said, not silent
    edge_50p = pipeline_params(160e3, Aqm.FIFO, limit_pkts=50)   # 3.9 s: beyond the 32-bit clock's 2^31 ns
    with pytest.raises(ConfigError, match="link 0: buffer: .* 2\\^31 ns"):
        tofino.all_entries(ROUTES, [tofino.AccessLink(0, None, edge_50p)], 2 ** 14)


def test_what_the_tna_program_cannot_do_is_refused():
    ok = pipeline_params(2e6, Aqm.FIFO, limit_bytes=10_000)
    with pytest.raises(ConfigError, match="N_LINKS"):
        tofino.all_entries(ROUTES, [tofino.AccessLink(2 ** 14, "10.0.0.1", ok)], 2 ** 14)
    with pytest.raises(ConfigError, match="without a client"):
        tofino.all_entries(ROUTES, [tofino.AccessLink(1, None, ok), tofino.AccessLink(2, None, ok)], 2 ** 14)
    with pytest.raises(ConfigError, match="same id"):
        tofino.all_entries(ROUTES, [tofino.AccessLink(1, "10.0.0.1", ok), tofino.AccessLink(1, "10.0.0.2", ok)],
                           2 ** 14)
    rates = [tofino.AccessLink(i, f"10.0.{i // 256}.{i % 256}", pipeline_params(1e6 + 1000 * i, Aqm.FIFO,
                                                                                 limit_bytes=10_000))
             for i in range(arith.RATE_CLASSES + 1)]
    with pytest.raises(ConfigError, match="rate classes"):
        tofino.all_entries(ROUTES, rates, 2 ** 14)


def test_the_mirror_header_size_matches_the_p4_header():
    text = (ROOT / "p4src" / "tofino" / "types.p4").read_text()
    body = re.search(r"header telemetry_mirror_h \{(.*?)\}", text, re.S)[1]
    widths = {}
    bits = 0
    for m in re.finditer(r"^\s*(bit<(\d+)>|\w+)\s+\w+;", body, re.M):
        bits += int(m[2]) if m[2] else widths[m[1]]
    assert bits == 8 * tofino.MIRROR_HEADER_BYTES


def test_device_config_is_stratums_bf_pipeline_config(tmp_path):
    (tmp_path / "pipe").mkdir()
    (tmp_path / "bfrt.json").write_text('{"tables": []}')
    (tmp_path / "pipe" / "context.json").write_text('{"program_name": "bottleneck_tna"}')
    (tmp_path / "pipe" / "tofino.bin").write_bytes(bytes(range(256)))
    blob = stratum.device_config(stratum.CompilerOutput(tmp_path), "bottleneck_tna", (0, 2))
    # bf.proto's field numbers, read off the wire by protobuf itself (not by the class that wrote it)
    top = {f.field_number: f.data for f in unknown_fields.UnknownFieldSet(_unknown(blob))}
    assert top[1] == b"bottleneck_tna" and top[2] == b'{"tables": []}'
    prof = {}
    for f in unknown_fields.UnknownFieldSet(_unknown(top[3])):
        prof.setdefault(f.field_number, []).append(f.data)
    assert prof[1] == [b"pipe"] and prof[2] == [b'{"program_name": "bottleneck_tna"}']
    assert prof[3] == [bytes(range(256))]
    msg = stratum.parse_device_config(blob)
    assert list(msg.profiles[0].pipe_scope) == [0, 2]


def _unknown(data: bytes) -> empty_pb2.Empty:
    m = empty_pb2.Empty()
    m.ParseFromString(data)
    return m


def test_device_config_names_what_is_missing(tmp_path):
    (tmp_path / "bfrt.json").write_text("{}")
    with pytest.raises(stratum.DeviceConfigError, match="context.json"):
        stratum.device_config(stratum.CompilerOutput(tmp_path), "x")


def test_codel_runs_only_where_the_program_has_it():
    links = two_links()  # link 0 runs CoDel
    with pytest.raises(ConfigError, match="codel is not in this TNA program"):
        tofino.all_entries(ROUTES, links, 2 ** 14, codel=False)
    red = [tofino.AccessLink(0, None, pipeline_params(2e6, Aqm.RED, limit_bytes=50_000))]
    with pytest.raises(ConfigError, match="red is not in this TNA program"):
        tofino.all_entries(ROUTES, red, 2 ** 14, codel=True)


def test_codel_links_share_a_control_law_per_interval():
    links = two_links() + [tofino.AccessLink(9, "10.0.1.9", pipeline_params(
        5e6, Aqm.CODEL, limit_bytes=50_000, codel={"interval_s": 0.050}))]
    ents = tofino.all_entries(ROUTES, links, 2 ** 14, codel=True)
    laws = {e.match["law"] for e in ents if e.table_id == "codel_law"}
    assert laws == {0, 1}  # RFC 8289's 100 ms (the default, profile 0) and 50 ms
    knobs = {e.match["link"]: e.action.args for e in ents if e.table_id == "codel_cfg"}
    assert knobs[9]["law"] == 1 and knobs[0]["law"] == knobs[1]["law"] == 0
    # in CoDel's 16 ns units; negative offsets are two's complement
    assert knobs[9]["fa_offset"] == 50_000_000 >> 4 and knobs[9]["recent_offset"] == (1 << 32) - 16 * (50_000_000 >> 4)


def test_a_codel_link_beyond_serial_time_is_refused():
    # EDGE with twice its BDP (1.06 s of buffer) fits: CoDel's times are in 16 ns units
    edge = [tofino.AccessLink(0, None, pipeline_params(160e3, Aqm.CODEL, limit_bytes=21_196))]
    assert any(e.table_id == "codel_cfg" for e in tofino.all_entries(ROUTES, edge, 2 ** 14, codel=True))
    slow = [tofino.AccessLink(0, None, pipeline_params(2e6, Aqm.CODEL, limit_bytes=50_000, codel={"interval_s": 2.0}))]
    with pytest.raises(ConfigError, match="link 0: codel: .*2\\^35"):
        tofino.all_entries(ROUTES, slow, 2 ** 14, codel=True)
    # a link without CoDel keeps codel_cfg's default knobs, whatever its own CoDel parameters
    fifo = [tofino.AccessLink(0, None, pipeline_params(2e6, Aqm.FIFO, limit_bytes=50_000, codel={"interval_s": 2.0}))]
    assert not any(e.table_id == "codel_cfg" for e in tofino.all_entries(ROUTES, fifo, 2 ** 14, codel=True))


def test_codel_cfg_default_is_the_controllers():
    """link.p4's default codel_cfg action holds the knobs codel_knobs derives for RFC 8289's defaults."""
    src = (ROOT / "p4src" / "tofino" / "link.p4").read_text()
    m = re.search(r"default_action = set_codel\(([^)]*)\)", src)
    assert m, "codel_cfg's default action is gone from link.p4"
    got = [int(x) for x in m.group(1).split(",")]
    a = tofino.default_codel().args
    assert got == [a["below_busy"], a["fa_offset"], a["recent_offset"], a["law"]]


def test_the_switch_refuses_what_its_program_lacks_before_connecting():
    """TnaBottleneckSwitch checks its entries against the P4Info it will push: CoDel on Tofino 1 (whose
    program has none) is a ConfigError at construction, not a failed task after connecting."""
    from controller.switch import DesiredState, SwitchTarget
    def target(t):   # (the device config is only read, not checked, before connecting: any file does)
        return SwitchTarget(p4info=P4INFO[t], p4blob=P4INFO[t])
    codel = pipeline_params(2e6, Aqm.CODEL, limit_bytes=50_000)
    state = DesiredState(codel, ROUTES, None)
    with pytest.raises(ConfigError, match="link 0: codel is not in this TNA program"):
        tofino.TnaBottleneckSwitch(target("tofino"), state)
    tofino.TnaBottleneckSwitch(target("tofino2"), state)   # Tofino 2's has CoDel ...
    pie = DesiredState(pipeline_params(2e6, Aqm.PIE, limit_bytes=50_000), ROUTES, None)
    with pytest.raises(ConfigError, match="link 0: pie is not in this TNA program"):
        tofino.TnaBottleneckSwitch(target("tofino"), pie)
    tofino.TnaBottleneckSwitch(target("tofino2"), pie)     # ... and PIE
    red = DesiredState(pipeline_params(2e6, Aqm.RED, limit_bytes=50_000, red=HSPA_RED), ROUTES, None)
    with pytest.raises(ConfigError, match="link 0: red is not in this TNA program"):
        tofino.TnaBottleneckSwitch(target("tofino2"), red)
    tofino.TnaBottleneckSwitch(target("tofino2-red"), red)     # RED in its own build ...
    with pytest.raises(ConfigError, match="link 0: codel is not in this TNA program"):
        tofino.TnaBottleneckSwitch(target("tofino2-red"), state)   # ... without CoDel
    iwa = DesiredState(pipeline_params(2e6, Aqm.IWA, limit_bytes=50_000), ROUTES, None)
    with pytest.raises(ConfigError, match="link 0: iwa cannot be installed on a Tofino yet"):
        tofino.TnaBottleneckSwitch(target("tofino2-red"), iwa)


def test_pie_runs_only_where_the_program_has_it():
    with pytest.raises(ConfigError, match="link 8: pie is not in this TNA program"):
        tofino.all_entries(ROUTES, [pie_link()], 2 ** 14, codel=True, pie=False)
    ents = tofino.all_entries(ROUTES, [pie_link()], 2 ** 14, codel=False, pie=True)
    scale = [e for e in ents if e.table_id == "pie_scale"]
    assert len(scale) == len(scale_rows()) <= 160    # p4src/tofino/types.p4: PIE_SCALE_ROWS
    cfg = [e for e in ents if e.table_id == "pie_cfg"]
    assert [e.match["link"] for e in cfg] == [8]
    assert cfg[0].action.args["half"] == 7_500_000 and cfg[0].action.args["mtu2"] == 2 * 1514 * 1600


def test_pie_links_share_term_tables_per_alpha_and_beta():
    links = [pie_link(), pie_link(9, "10.0.1.9"), pie_link(10, "10.0.1.10", alpha=0.25, beta=2.5)]
    ents = tofino.all_entries(ROUTES, links, 2 ** 14, codel=False, pie=True)
    profiles = {e.match["link"]: e.action.args["profile"] for e in ents if e.table_id == "pie_cfg"}
    assert profiles == {8: 0, 9: 0, 10: 1}     # RFC 8033's alpha and beta are profile 0
    rows = [e for e in ents if e.table_id == "pie_term_b" and e.match["profile"] == 1]
    # beta * 100 ns of delay (exact below 128), unscaled (shift 0: exponent key 11), Q31 from Q48
    beta = pipeline_params(5e6, Aqm.PIE, pie={"beta": 2.5}).pie.beta_q48
    row = next(e for e in rows if (e.match["neg"], e.match["e"], e.match["m"]) == (0, 11, 100))
    assert row.action.args["t"] == (100 * beta) >> 17
    neg = next(e for e in rows if (e.match["neg"], e.match["e"], e.match["m"]) == (1, 11, 100))
    assert neg.action.args["t"] == (1 << 32) - (((100 * beta) >> 17) + 1)   # floored, two's complement
    many = [pie_link(20 + i, f"10.0.2.{i}", alpha=0.1 + 0.01 * i) for i in range(tofino.PIE_PROFILES)]
    with pytest.raises(ConfigError, match="alpha/beta"):
        tofino.all_entries(ROUTES, many, 2 ** 14, codel=False, pie=True)


def test_a_pie_link_beyond_serial_time_is_refused():
    with pytest.raises(ConfigError, match="link 8: pie: .*2\\^31"):
        tofino.all_entries(ROUTES, [pie_link(max_burst_s=3.0)], 2 ** 14, codel=False, pie=True)


def test_pie_cfg_default_is_the_controllers():
    """link.p4's default pie_cfg action holds the knobs pie_knobs derives for RFC 8033's defaults with
    1514 B frames at 2 Mbit/s, term profile 0."""
    src = (ROOT / "p4src" / "tofino" / "link.p4").read_text()
    m = re.search(r"default_action = set_pie\(([^)]*)\)", src)
    assert m, "pie_cfg's default action is gone from link.p4"
    got = [int(x) for x in m.group(1).split(",")]
    a = tofino.pie_action(pipeline_params(2e6).pie, pipeline_params(2e6).queue.mtu_ns, 0).args
    assert got == [a["target"], a["half"], a["tupdate"], a["max_burst"], a["mtu2"], a["profile"]]


def test_red_runs_only_where_the_program_has_it():
    """red_cfg holds the link's knobs as refmodel/tofino_red.py derives them; red_rest and the four Exp2 tables
    their rows once, as many as the program's tables hold (bottleneck_tna.p4: RED_REST_ENTRIES,
    RED_EXP_ENTRIES)."""
    with pytest.raises(ConfigError, match="link 9: red is not in this TNA program"):
        tofino.all_entries(ROUTES, [red_link()], 2 ** 14, codel=True, pie=True, red=False)
    assert not any(e.table_id.startswith("red_") for e in tofino.all_entries(ROUTES, [pie_link()], 2 ** 14,
                                                                             pie=True, red=True))
    links = [red_link(), red_link(10, "10.0.1.10", w_q=0.2, max_p=0.65, th_min=3, th_max=40)]
    ents = tofino.all_entries(ROUTES, links, 2 ** 14, red=True)
    cfg = {e.match["link"]: e.action.args for e in ents if e.table_id == "red_cfg"}
    assert sorted(cfg) == [9, 10]
    k = tna_red_config(links[0].params.red, links[0].params.queue.byte_time_q16)
    assert cfg[9] == {name: v & 0xFFFFFFFF for name, v in k.items()}
    assert cfg[9]["cp_offset"] == (-links[0].params.red.log_mps) & 0xFFFFFFFF and cfg[9] != cfg[10]
    rest = [e for e in ents if e.table_id == "red_rest"]
    size = int(re.search(r"#define RED_REST_ENTRIES (\d+)", PROGRAM)[1])
    assert len(rest) == size and {e.match["cp4"] for e in rest} == set(range(size))
    exp_size = int(re.search(r"#define RED_EXP_ENTRIES (\d+)", PROGRAM)[1])
    for table in tofino.RED_EXP_TABLES:
        rows = {e.match["l4"]: e.action.args["v"] for e in ents if e.table_id == table}
        assert len(rows) == exp_size and rows[0] == 1 and rows[(12 << 12) >> 2] == 1 << 12


def test_a_red_link_whose_idle_decay_starts_beyond_serial_time_is_refused():
    """red.p4 compares the idle time with the decay's first step (dm packet times) by the sign of their
    difference: a step of 2^31 ns or more is refused, naming the link (w_q = 0.001 at 160 kbit/s: 30
    packets of 75 ms)."""
    slow = tofino.AccessLink(3, "10.0.1.3", pipeline_params(160e3, Aqm.RED, limit_pkts=14,
                                                            red=dict(w_q=0.001, max_p=0.1, th_min=3, th_max=9)))
    with pytest.raises(ConfigError, match="link 3: red: the idle decay starts after"):
        tofino.all_entries(ROUTES, [slow], 2 ** 14, red=True)
    tofino.all_entries(ROUTES, [red_link()], 2 ** 14, red=True)
