"""The controller's configuration and the P4Runtime entities it writes (no switch needed)."""

import pytest

from controller import config, entries
from controller.cli import parse_routes
from refmodel.constants import Aqm
from refmodel.params import ConfigError
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
    (lambda c: c["aqm"].update(iwa={"target_s": 99.0}), r"target_ns = 99000000000 is out of range"),
])
def test_bad_configs_name_the_field_and_range(mutate, message):
    import copy
    c = copy.deepcopy(HSPA)
    mutate(c)
    with pytest.raises(ConfigError, match=message):
        config.params_from_dict(c)


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
    defaults = entries.config_defaults(p)
    assert [e.table_id for e in defaults][-1] == "bottleneck_cfg"
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
