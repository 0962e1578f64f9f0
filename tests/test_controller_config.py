"""The controller's configuration and the P4Runtime entities it writes (no switch needed)."""

import pytest

from controller import config, entries
from controller.cli import parse_routes
from controller.rates import RateClasses, class_entries, contents, product_entries, rate_key, tx_entries
from refmodel import arith
from refmodel.constants import Aqm, Telemetry
from refmodel.params import ConfigError, byte_time_q16
from refmodel.pipeline import Route

HSPA = {
    "link": {"rate_bps": 2e6},
    "buffer": {"packets": 48},
    "aqm": {"name": "red", "red": {"w_q": 0.002, "max_p": 0.1, "th_min": 5, "th_max": 20}},
}


def test_params_from_config():
    p = config.params_from_dict(HSPA)
    assert p.queue.aqm == Aqm.RED and p.queue.limit_pkts == 48
    assert p.red.thmin_ns == 5 * 1500 * 4000


@pytest.mark.parametrize("mutate,message", [
    (lambda c: c["aqm"].update(name="wred"), "aqm = 'wred' is unknown"),
    (lambda c: c["link"].update(rate_bps=-5), "rate_bps"),
    (lambda c: c["aqm"]["red"].update(th_min=30), "aqm.red: th_min = 30, th_max = 20"),
    (lambda c: c["aqm"]["red"].update(wq=1), "aqm.red: unknown key"),
    (lambda c: c["buffer"].update(packets=70000), "limit_pkts = 70000 is out of range: allowed 0..1023"),
    (lambda c: c.update(extra={}), "unknown section"),
    (lambda c: c["aqm"].update(iwa={"target_s": 99.0}),
     r"aqm.iwa: target_ns = 99000000000 is out of range: allowed 1..4294967295 \(from aqm.iwa.target_s = 99.0\)"),
    (lambda c: c["aqm"].update(iwa={"mtu_bytes": 54}), r"aqm.iwa: mss_bytes = 0 .* \(from aqm.iwa.mtu_bytes = 54\)"),
    (lambda c: c["aqm"].update(iwa={"mtu_bytes": 1514.5}), "aqm.iwa: mtu_bytes = 1514.5 is not an integer"),
    (lambda c: c["aqm"].update(iwa={"hold_s": "1s"}), "aqm.iwa: hold_s = '1s' is not a number"),
    (lambda c: c["aqm"].update(iwa={"hold_s": 5.0}), r"aqm.iwa: hold_ns = 5000000000 .* \(from aqm.iwa.hold_s = 5.0\)"),
    (lambda c: c["aqm"].update(iwa={"hold_s": 2.0, "age_s": 1.0}),
     r"aqm.iwa: age_s = 1.0 is out of range: must be >= hold_s"),
    (lambda c: c["aqm"].update(iwa={"allowance_bytes": 3028}), r"aqm.iwa: unknown key\(s\) \['allowance_bytes'\]; "
     r"allowed \['age_s', 'budget_s', 'hold_s', 'mtu_bytes', 'target_s'\]"),
])
def test_bad_configs_name_the_field_and_range(mutate, message):
    import copy
    c = copy.deepcopy(HSPA)
    mutate(c)
    with pytest.raises(ConfigError, match=message):
        config.params_from_dict(c)


def test_telemetry_is_the_links_and_defaults_to_every_packet():
    import copy
    assert config.params_from_dict(HSPA).queue.telemetry == Telemetry.ALL
    c = copy.deepcopy(HSPA)
    c["link"]["telemetry"] = "datagrams"
    p = config.params_from_dict(c)
    assert p.queue.telemetry == Telemetry.DATAGRAMS
    (cfg,) = [e for e in entries.config_defaults(p, rate_class=0) if e.table_id == "bottleneck_cfg"]
    assert cfg.action.args["telemetry"] == 2  # constants.p4's TELEMETRY_DATAGRAMS (test_constants_sync)
    c["link"]["telemetry"] = "some"
    with pytest.raises(ConfigError, match="link: telemetry = 'some' is unknown"):
        config.params_from_dict(c)


def test_iwa_knobs_in_human_units():
    c = {"link": {"rate_bps": 2e6}, "aqm": {"name": "iwa", "iwa": {"target_s": 0.030, "mtu_bytes": 1014,
                                                                   "hold_s": 0.5, "age_s": 4}}}
    i = config.params_from_dict(c).iwa
    assert (i.target_ns, i.mss_bytes, i.hold_ns, i.age_ns) == (30_000_000, 960, 500_000_000, 4_000_000_000)
    # a 960 B segment occupies the 2 Mbit/s link for its 1014 B frame: 4 us per frame byte
    assert (i.payload_ns_q16 * 960) >> 16 == pytest.approx(1014 * 4000, abs=1)
    p = config.params_from_dict({"link": {"rate_bps": 1e6}, "aqm": {"name": "iwa"}})
    assert p.iwa.payload_ns_q16 == 2 * config.params_from_dict(c | {"aqm": {"name": "iwa"}}).iwa.payload_ns_q16
    assert p.codel.target_ns == p.iwa.target_ns == 15_776_000  # iwa's CoDel: iwa's target (40 ms - 2 frames)


def test_iwa_entities_carry_the_set_iwa_parameters():
    p = config.params_from_dict({"link": {"rate_bps": 2e6}, "aqm": {"name": "iwa", "iwa": {"target_s": 0.030}}})
    (iwa,) = [e for e in entries.config_defaults(p, rate_class=0) if e.table_id == "iwa_cfg"]
    assert iwa.action.name == "set_iwa"
    assert iwa.action.args == {"target_ns": 30_000_000, "mss_bytes": 1460, "hold_ns": 1_000_000_000,
                               "age_ns": 10_000_000_000, "floor_cap_ns": 0,  # (no buffer limit: no floor cap)
                               "budget_cap_ns": 0}  # (a fixed rate: no budget cap)
    assert list(iwa.action.args) == ["target_ns", "mss_bytes", "hold_ns", "age_ns", "floor_cap_ns",
                                     "budget_cap_ns"]  # P4's order
    # the rate conversions are the rate class's product tables
    rows = contents(product_entries(rate_key(p), 4))
    assert rows["span_bytes.products"] == rows["room_bytes.products"] == arith.mul_rows(p.iwa.bytes_per_ns_q32)
    assert rows["grant_ns.products"] == arith.mul_rows(p.iwa.payload_ns_q16)
    from refmodel.params import FIELD_BITS
    assert all(v < 1 << FIELD_BITS[k] for k, v in iwa.action.args.items())
    # what the tuner rewrites between rate changes: IWA's knobs and its established flows' CoDel target
    tuned = entries.iwa_knobs(p)
    assert [e.table_id for e in tuned] == ["codel_cfg", "iwa_cfg"] and all(e.is_default_action for e in tuned)
    assert tuned[0].action.args == {"target_ns": 30_000_000, "interval_ns": 100_000_000}  # iwa's target


def test_toml_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[switch.link]\nrate_bps = 160e3\n[switch.buffer]\npackets = 50\n[switch.aqm]\nname = "codel"\n')
    p = config.load(f)
    assert p.queue.aqm == Aqm.CODEL and p.queue.limit_pkts == 50
    with pytest.raises(ConfigError, match="s.toml"):
        f.write_text("[switch.link\n")
        config.load(f)


def test_entities_cover_every_config_table_selector_last():
    p = config.params_from_dict(HSPA)
    defaults = entries.config_defaults(p, rate_class=5)
    assert [e.table_id for e in defaults][-1] == "bottleneck_cfg"
    assert defaults[-1].action.args["rate_class"] == 5
    assert {e.table_id for e in defaults} == {"red_cfg", "codel_cfg", "codel_control_law", "pie_cfg", "iwa_cfg",
                                              "bottleneck_cfg"}
    assert all(e.is_default_action for e in defaults)
    lookups = entries.lookup_tables(p)
    assert sum(e.table_id == "red_idle_decay" for e in lookups) == len(p.red.idle_decay)
    assert sum(e.table_id == "codel_control_law" for e in lookups) == len(p.codel.control_law)
    fwd = entries.forwarding({1: Route(2, True), 2: Route(1, False)})
    assert [e.action.args["downstream"] for e in fwd] == [1, 0]


def test_routes_spec():
    assert parse_routes("1>2:down,2>1:up") == {1: Route(2, True), 2: Route(1, False)}
    with pytest.raises(ConfigError, match="routes"):
        parse_routes("1-2")


# --------------------------------------------------------------------------- access links (issue 12, item 3)

CODEL = config.params_from_dict({"link": {"rate_bps": 1e6}, "buffer": {"packets": 20}, "aqm": {"name": "codel"}})


def test_link_entries_key_every_config_table_and_map_the_clients_last():
    link = 3
    out = entries.link_entries(link, CODEL, ["10.0.1.2", 0x0A000103], rate_class=2)
    ranges = [e for e in out if e.table_id in entries.RANGE_TABLES]
    config_ = [e for e in out if e.table_id in entries.CONFIG_TABLES]
    assert [e.table_id for e in config_] == list(entries.CONFIG_TABLES)  # the selector last
    assert all(e.match == {"link": link} and not e.is_default_action for e in config_)
    # the same action and parameters a default action would hold
    defaults = {e.table_id: e.action for e in entries.config_defaults(CODEL, rate_class=2)}
    assert all(e.action == defaults[e.table_id] for e in config_)
    assert [(e.table_id, e.match["client_addr"], e.action.args["link"]) for e in out[-2:]] == [
        ("link_of", 0x0A000102, link), ("link_of", 0x0A000103, link)]
    assert all(e.priority == entries.LINK_PRIORITY > entries.DEFAULT_PRIORITY and e.match["link"] == link
               for e in ranges)
    assert out.index(ranges[-1]) < out.index(config_[0])  # the AQM's lookups before its knobs


def test_a_links_range_entries_cover_every_key():
    for table, key in (("red_idle_decay", "idle_key"), ("codel_control_law", "law_count")):
        rows = [tuple(int(x) for x in e.match[key].split("...")) for e in entries.link_lookup_tables(1, CODEL)
                if e.table_id == table]
        assert rows[0][0] == 0 and rows[-1][1] == (1 << 32) - 1
        assert all(b[0] == a[1] + 1 for a, b in zip(rows, rows[1:]))
    law = [e for e in entries.link_lookup_tables(1, CODEL) if e.table_id == "codel_control_law"]
    assert len(law) == len(CODEL.codel.control_law) + 2  # count 0 and the counts beyond the table
    assert law[-1].action.args["step_ns"] == entries.law_default(CODEL)


def test_link_entries_refuse_bad_links_and_clients():
    with pytest.raises(ConfigError, match="link"):
        entries.link_entries(16, CODEL, rate_class=0)
    with pytest.raises(ConfigError, match="rate_class"):
        entries.link_entries(1, CODEL, rate_class=64)
    with pytest.raises(ConfigError, match="client"):
        entries.link_of({"10.0.1.300": 1})


class RecordingSwitch:
    """What BottleneckSwitch.apply_all writes, in order, without a switch."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, list]] = []

    async def delete_all(self) -> None:
        self.writes.append(("delete_all", []))

    async def insert(self, es) -> None:
        self.writes.append(("insert", list(es) if isinstance(es, list) else [es]))

    async def modify(self, es) -> None:
        self.writes.append(("modify", list(es) if isinstance(es, list) else [es]))


def _applied(state) -> list[tuple[str, list]]:
    import asyncio

    from controller.rates import RateClasses
    from controller.switch import BottleneckSwitch, SwitchTarget
    rec = RecordingSwitch()
    sw = object.__new__(BottleneckSwitch)  # its bookkeeping, no finsy switch
    sw.state, sw.target, sw.rates, sw.class_of, sw._classes_known = state, SwitchTarget(), RateClasses(), {}, False
    asyncio.run(sw.apply_all(rec))
    return rec.writes


def test_one_link_writes_exactly_what_the_single_link_controller_wrote():
    from controller.switch import DesiredState
    p = config.params_from_dict(HSPA)
    routes = {1: Route(2, True), 2: Route(1, False)}
    assert _applied(DesiredState(p, routes, 3)) == [
        ("delete_all", []), ("insert", entries.forwarding(routes)), ("insert", [entries.telemetry_session(3)]),
        ("insert", entries.lookup_tables(p)), ("insert", class_entries(rate_key(p), 0)),
        ("modify", entries.config_defaults(p, rate_class=0)),
    ]


def test_links_are_written_after_the_defaults_and_clients_last():
    from controller.switch import DesiredState
    p = config.params_from_dict(HSPA)
    writes = _applied(DesiredState(p, {1: Route(2, True)}, None, links={1: CODEL}, clients={"10.0.1.2": 1}))
    assert writes[3:5] == [("insert", class_entries(rate_key(p), 0)),
                           ("modify", entries.config_defaults(p, rate_class=0))]
    # the link's own rate gets its own class, written before the link's config names it
    assert CODEL.queue.byte_time_q16 != p.queue.byte_time_q16
    assert writes[5] == ("insert", class_entries(rate_key(CODEL), 1))
    assert writes[6] == ("insert", entries.link_lookup_tables(1, CODEL) + entries.link_config(1, CODEL, rate_class=1))
    assert writes[7] == ("insert", entries.link_of({"10.0.1.2": 1}))
    assert len(writes) == 8


def test_links_of_one_rate_share_a_class():
    from controller.switch import DesiredState
    p = config.params_from_dict(HSPA)
    same = config.params_from_dict(HSPA | {"aqm": {"name": "codel"}})
    writes = _applied(DesiredState(p, {1: Route(2, True)}, None, links={1: same, 2: same}))
    assert sum(e.table_id == "tx_time_hi" for _, es in writes for e in es) == arith.TX_HI_ENTRIES
    cfg = [e for _, es in writes for e in es if e.table_id == "bottleneck_cfg"]
    assert {e.action.args["rate_class"] for e in cfg} == {0}


def key_at(rate_bps: float):
    return rate_key(config.params_from_dict({"link": {"rate_bps": rate_bps}}))


def test_a_rate_change_fills_a_free_class_before_the_link_uses_it():
    rc = RateClasses(n_classes=3)
    bt = [key_at(r) for r in (1e6, 2e6, 3e6, 4e6)]
    assert rc.place(bt[0], []) == (0, "insert", class_entries(bt[0], 0))
    assert rc.place(bt[0], [0])[:2] == (0, "")  # already there: nothing to write
    assert rc.place(bt[1], [0])[:2] == (1, "insert")
    assert rc.place(bt[2], [0, 1])[:2] == (2, "insert")
    # every class written: a rate change overwrites one no link uses, never the one still in use
    cls, op, ents = rc.place(bt[3], [1, 2])
    assert (cls, op) == (0, "modify") and ents == class_entries(bt[3], 0)
    assert rc.place(bt[3], [1, 2])[:2] == (0, "")  # class 0 holds 4 Mbit/s now
    with pytest.raises(ConfigError, match="rate classes"):
        rc.place(bt[0], [0, 1, 2])
    assert rc.holds == {0: bt[3], 1: bt[1], 2: bt[2]}  # a refused rate leaves the classes as they were


def test_pie_products_are_rows_of_m_times_the_constant_for_every_link():
    p = config.params_from_dict({"link": {"rate_bps": 2e6}, "aqm": {"name": "pie"}})
    rows = {(e.table_id, e.match["m"]): e.action.args["product"] for e in entries.lookup_tables(p)
            if e.table_id in ("pie_alpha_mul", "pie_beta_mul")}
    assert len(rows) == 2 * arith.MANT_ENTRIES
    assert all(rows["pie_alpha_mul", m] == m * p.pie.alpha_q48 for m in range(arith.MANT_ENTRIES))
    assert all(rows["pie_beta_mul", m] == m * p.pie.beta_q48 for m in range(arith.MANT_ENTRIES))
    own = [e for e in entries.link_lookup_tables(2, p) if e.table_id == "pie_beta_mul"]
    assert len(own) == arith.MANT_ENTRIES and all(e.match["link"] == 2 for e in own)
    (pie_cfg,) = [e for e in entries.config_defaults(p, rate_class=0) if e.table_id == "pie_cfg"]
    assert "alpha_q48" not in pie_cfg.action.args  # the tables hold alpha and beta


def test_classes_another_controller_wrote_are_reused_or_left_alone():
    rc = RateClasses(n_classes=4)
    a, b, c = (key_at(r) for r in (1e6, 2e6, 3e6))
    rc.learn({0: contents(class_entries(a, 0)), 2: contents(class_entries(b, 2))})
    assert rc.place(b, [])[:2] == (2, "")  # the same rate's tables: reused, nothing written
    assert rc.place(c, [])[:2] == (1, "insert")  # a new rate: a class nobody wrote
    assert rc.place(key_at(4e6), [])[:2] == (3, "insert")
    with pytest.raises(ConfigError):  # class 0 is another controller's: never overwritten
        rc.place(key_at(5e6), [1, 2, 3])


# --------------------------------------------------------------------------- [links.N] in the configuration

LINKS_TOML = """
[link]
rate_bps = 2e6
[buffer]
packets = 48
[aqm]
name = "iwa"
[links.1]
clients = ["10.0.1.2", "10.0.1.3"]
[links.1.link]
rate_bps = 1e6
[links.1.aqm]
name = "codel"
[links.2]
clients = ["10.0.1.4"]
"""


def test_links_sections_give_links_their_clients_and_parameters(tmp_path):
    f = tmp_path / "links.toml"
    f.write_text(LINKS_TOML)
    top = config.load(f)
    links, clients = config.load_links(f)
    assert top.queue.aqm == Aqm.IWA
    assert clients == {"10.0.1.2": 1, "10.0.1.3": 1, "10.0.1.4": 2}
    assert list(links) == [1]  # link 2 has clients only: it runs on the defaults, with its own state
    own = links[1]
    assert own.queue.aqm == Aqm.CODEL and own.queue.byte_time_q16 == 2 * top.queue.byte_time_q16
    assert own.queue.limit_pkts == 48  # [buffer] left out: the top level's, whole
    assert config.load_links(tmp_path / "links.toml") == config.links_from_dict(config.load_table(f))


@pytest.mark.parametrize("extra,message", [
    ('[links.16]\nclients = ["10.0.2.1"]\n', "links.16: link = 16 is out of range"),
    ('[links.one]\nclients = ["10.0.2.1"]\n', "links.one: a link is named by its number"),
    ('[links.3]\nclient = ["10.0.2.1"]\n', "links.3: unknown key"),
    ('[links.3]\nclients = "10.0.2.1"\n', "links.3.clients: expected a list"),
    ('[links.3]\nclients = ["10.0.1.300"]\n', "links.3.clients: client = '10.0.1.300'"),
    ('[links.3]\nclients = ["10.0.1.4"]\n', "10.0.1.4 is already a client of link 2"),
    ('[links.3.aqm]\nname = "red"\n', "links.3.aqm.red: the red AQM needs"),
    ('[links.3.link]\nrate_bps = -1\n', "links.3.rate_bps"),
])
def test_bad_links_sections_are_refused_naming_the_section(extra, message):
    import tomllib
    with pytest.raises(ConfigError, match=message.replace(".", "\\.").replace("(", "\\(")):
        config.links_from_dict(tomllib.loads(LINKS_TOML + extra))


def test_the_tna_target_takes_one_client_per_link():
    import tomllib

    from controller.switch import DesiredState
    from controller.tofino import access_links
    cfg = tomllib.loads(LINKS_TOML)
    links, clients = config.links_from_dict(cfg)
    top = config.params_from_dict(cfg)
    with pytest.raises(ConfigError, match="links.1: the TNA program maps one client to a link, not 2"):
        access_links(DesiredState(top, {}, None, links, clients))
    del clients["10.0.1.3"]
    got = access_links(DesiredState(top, {}, None, links, clients))
    assert [(lk.link, lk.client, lk.params.queue.aqm) for lk in got] == [(1, "10.0.1.2", Aqm.CODEL),
                                                                         (2, "10.0.1.4", Aqm.IWA)]
