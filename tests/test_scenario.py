"""Scenario files as data: loading, checks, overrides, and the kernel peers' parameters per profile."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from accessnet import scenario as scen
from accessnet.profiles import profile
from accessnet.switches import KERNEL_QDISCS
from refmodel.params import ConfigError


def test_every_shipped_scenario_loads():
    for path in sorted(scen.SCENARIO_DIR.glob("*.toml")):
        sc = scen.load(str(path))
        assert sc.cases, path.name


def test_web6_is_the_main_job_matrix():
    sc = scen.load("web6")
    assert {(c.aqm, c.iw) for c in sc.cases} == {(a, i) for a in ("fifo", "red", "iwa") for i in (3, 10)}
    assert all(c.profile.name == "hspa" and c.buffer == {"packets": 48} for c in sc.cases)  # 2 x seed BDP 24


def test_overrides_replace_run_keys():
    sc = scen.load("web6", {"profile": "lte", "aqms": ["codel"], "iws": [10], "reps": 7})
    assert [c.name for c in sc.cases] == ["web6-lte-250p-codel-iw10"] and sc.reps == 7


@pytest.mark.parametrize("bad, match", [
    ({"rate_changes": [[5]]}, "rate_changes"),
    ({"rate_changes": [[5, -1]]}, "rate_changes"),
    ({"jitter_budget_ms": 0}, "jitter_budget_ms"),
    ({"colour": 1}, "unknown key"),
    ({"iws": [0]}, "IW must be"),
    ({"switch": "p4"}, "switch"),
])
def test_bad_run_keys_are_named(bad, match):
    with pytest.raises(ConfigError, match=match):
        scen.load("web6", bad)


def test_kernel_red_follows_the_profile():
    hspa = KERNEL_QDISCS["kred"]({"packets": 48}, profile("hspa"))
    edge = KERNEL_QDISCS["kred"]({"packets": 14}, profile("edge"))
    assert "min 7500 max 30000" in hspa and "bandwidth 2000000bit" in hspa  # HSPA row: 5 and 20 packets
    assert "min 4500 max 13500" in edge and "bandwidth 160000bit" in edge  # EDGE row: 3 and 9 packets


def test_run_limit_stretches_on_slow_links_only():
    from accessnet.workloads import run_limit_s, workloads_for
    web6 = scen.load("web6")
    plan = workloads_for(web6.cases[0].spec, 1)
    start = plan[1].plan["bursts"][0]["start_s"]
    assert run_limit_s(40, plan, profile("hspa").rate_bps) == 40  # 372 kB x 4 = 6 s at 2 Mbit/s: fits
    edge = run_limit_s(40, plan, profile("edge").rate_bps)
    assert edge == pytest.approx(start + 4 * 372_000 * 8 / 160_000 + 5, abs=1)  # about 91 s
    bulk = workloads_for({"bulk": {"start_s": 5, "bytes": 10**9}}, 1)
    assert run_limit_s(40, bulk, profile("edge").rate_bps) == 40  # a bulk flow runs to the limit


@pytest.mark.parametrize("section, bad, says", [
    ("run", {"profile": {"name": "x", "rate_bps": -1, "delay_ms": 70}}, "rate_bps = -1: must be a number in"),
    ("run", {"profile": {"name": "../../etc", "rate_bps": 1e6, "delay_ms": 70}}, "profile name = '../../etc'"),
    ("run", {"profile": {"name": "hspa", "rate_bps": 1e6, "delay_ms": 70}}, "built-in profile"),
    ("run", {"profile": {"name": "x", "rate_bps": 1e6, "delay_ms": 70, "colour": 1}}, "unknown key"),
    ("run", {"profile": {"name": "x", "rate_bps": 1e6, "delay_ms": 1e9}}, "delay_ms = 1000000000.0"),
    ("run", {"buffer": "0p"}, "0 packets; must be in \\[1, 100000\\]"),
    ("run", {"buffer": "10B"}, "10 bytes"),
    ("run", {"buffer": "-2bdp"}, "expected e.g."),
    ("run", {"cc": "cubic; rm -rf /"}, "cc = 'cubic; rm -rf /'"),
    ("run", {"cc": "nosuchcc"}, "not available in this kernel: allowed"),
    ("run", {"reps": 0}, "reps = 0: must be an integer in \\[1, 100000\\]"),
    ("run", {"reps": True}, "reps = True"),
    ("run", {"duration_s": -5}, "duration_s = -5"),
    ("run", {"iws": []}, "iws = \\[\\]"),
    ("run", {"iws": [10.5]}, "IW must be"),
    ("run", {"aqms": []}, "non-empty list"),
    ("run", {"aqms": ["fifo"], "switch": "kernel"}, "only the kernel AQMs"),
    ("run", {"ip": 5}, "\\[run\\] ip = 5: must be one of 4, 6"),
    ("run", {"telemetry": "tcp"}, "\\[run\\] telemetry = 'tcp': must be one of 'off', 'all', 'datagrams'"),
    ("run", {"nodelay": "yes"}, "\\[run\\] nodelay = 'yes': must be true or false"),
    ("run", {"nodelay": 1}, "\\[run\\] nodelay = 1: must be true or false"),
    ("web", {"flows": 0}, "\\[web\\] flows = 0"),
    ("web", {"start_s": [12, 10]}, "\\[web\\] start_s = \\[12, 10\\]"),
    ("web", {"flows": 10, "total_bytes": 5}, "flows = 10 is above total_bytes = 5"),
    ("web", {"colour": 1}, "\\[web\\] unknown key"),
    ("audio", {"interval_ms": 0}, "interval_ms = 0"),
    ("audio", {"payload": 9000}, "payload = 9000"),
    ("users", {"min_bytes": 10, "max_bytes": 5}, "min_bytes = 10 is above"),
    ("users", {"mode": "http3"}, "\\[users\\] mode = 'http3': must be one of 'fresh', 'keepalive', 'h2'"),
    ("users", {"mode": 2}, "\\[users\\] mode = 2"),
    ("users", {"mode": "keepalive", "objects": 0}, "\\[users\\] objects = 0: must be an integer in \\[1, 1000\\]"),
    ("users", {"mode": "keepalive", "connections": 1.5}, "\\[users\\] connections = 1.5"),
    ("users", {"mode": "keepalive", "keepalive_timeout_s": 0}, "\\[users\\] keepalive_timeout_s = 0"),
    ("users", {"objects": 4}, "\\[users\\] objects applies to mode 'keepalive' or 'h2', not to mode = 'fresh'"),
    ("users", {"mode": "h2", "connections": 2}, "\\[users\\] connections applies to mode 'keepalive', not to"),
    ("users", {"keepalive_timeout_s": 30}, "\\[users\\] keepalive_timeout_s applies to"),
    ("users", {"mode": "h2", "objects": 20, "min_bytes": 10}, "\\[users\\] objects = 20 is above min_bytes = 10"),
    ("rtc", {"size": 20}, "size = 20"),
    ("bulk", {"bytes": -1}, "bytes = -1"),
    ("burst", {"second_after_s": "soon"}, "second_after_s = 'soon'"),
    ("aqm", {"blue": {}}, "one table per P4 AQM"),
    ("aqm", {"iwa": {"nonsense_knob": 1}}, "aqm iwa"),
])
def test_every_bad_value_is_refused_with_key_value_and_range(tmp_path, section, bad, says):
    import tomllib
    data = tomllib.loads((scen.SCENARIO_DIR / "web6.toml").read_text())
    data[section] = {**data.get(section, {}), **bad}
    with pytest.raises(ConfigError, match=says):
        scen.build(tmp_path / "mine.toml", data)


def test_scenario_names_must_be_path_safe(tmp_path):
    import tomllib
    data = tomllib.loads((scen.SCENARIO_DIR / "web6.toml").read_text())
    with pytest.raises(ConfigError, match="scenario name"):
        scen.build(tmp_path / "a b;c.toml", data)


def test_a_radio_profile_draws_its_rate_per_slot_paired_by_seed():
    from accessnet.profiles import PROFILES
    r = PROFILES["pam13radio"]
    a, b, c = r.rate_schedule(7, 60.0), r.rate_schedule(7, 60.0), r.rate_schedule(8, 60.0)
    assert a == b and a != c  # the same seed (every AQM of a pair) gets the same radio, another seed another
    assert [t for t, _ in a] == [round(k * r.slot_s, 6) for k in range(len(a))] and a[-1][0] >= 60.0 - r.slot_s
    rates = np.array([x for _, x in a])
    assert rates.min() >= r.rate_min_bps and rates.max() <= 2 * r.rate_bps - r.rate_min_bps
    assert abs(rates.mean() - r.rate_bps) < 0.1 * r.rate_bps  # 300 slots of a uniform draw: mean within 10 %
    assert PROFILES["hspa"].rate_schedule(7, 60.0) == ()


def test_custom_radio_profile_is_checked():
    p = profile({"name": "myradio", "rate_bps": 2e6, "delay_ms": 10, "rate_min_bps": 5e5, "client_window_bytes": 20000})
    assert p.rate_min_bps == 5e5 and p.slot_s == 0.2 and p.client_window_bytes == 20000 and p.server_delay_ms == 11
    assert profile({"name": "fixed2", "rate_bps": 2e6, "delay_ms": 10}).rate_schedule(1, 5) == ()
    with pytest.raises(ConfigError, match="above its mean"):
        profile({"name": "bad", "rate_bps": 1e6, "delay_ms": 10, "rate_min_bps": 2e6})
    with pytest.raises(ConfigError, match="slot_s"):
        profile({"name": "bad", "rate_bps": 1e6, "delay_ms": 10, "rate_min_bps": 5e5, "slot_s": 0.01})


def test_rate_changes_and_a_radio_profile_are_refused_together(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('[run]\nprofile = "pam13radio"\nbuffer = "256p"\nrate_changes = [[5, 1000000]]\n[audio]\n')
    with pytest.raises(ConfigError, match="radio"):
        scen.load(str(f))


def test_meta_records_a_profiles_radio_and_window_only_where_it_has_them():
    from accessnet.profiles import PROFILES
    assert PROFILES["hspa"].as_meta() == {"name": "hspa", "rate_bps": 2e6, "delay_ms": 70.0, "server_delay_ms": 11.0}
    radio = PROFILES["pam13radio"].as_meta()
    assert radio["rate_min_bps"] == 625e3 and radio["slot_s"] == 0.2 and radio["client_window_bytes"] == 14_600
    assert profile(radio | {"name": "copy"}) == dataclasses.replace(PROFILES["pam13radio"], name="copy")


# ----------------------------------------------------------------------------- [run] ip


@pytest.mark.parametrize("value", [5, 0, 46, "6", 6.0, True, [6], None])
def test_ip_is_4_or_6_and_a_bad_one_is_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match=r"\[run\] ip = .*: must be one of 4, 6"):
        scen.load("smoke", {"ip": value})


def test_ip_defaults_to_4_and_ipv4_case_names_stay_what_they_were():
    sc = scen.load("web6")
    assert sc.ip == 4 and {c.ip for c in sc.cases} == {4}
    # the names runs recorded before the key existed (docs/data-formats.md), so those runs still resume
    assert sorted(c.name for c in sc.cases) == sorted(f"web6-hspa-48p-{a}-iw{i}" for a in ("fifo", "red", "iwa")
                                                      for i in (3, 10))
    assert {c.pair_key for c in sc.cases} == {"web6-hspa-48p-iw3", "web6-hspa-48p-iw10"}
    assert [c.name for c in scen.load("web6", {"ip": 4, "aqms": ["iwa"], "iws": [10]}).cases] == ["web6-hspa-48p-iwa-iw10"]


def test_telemetry_goes_to_each_p4_cases_switch_and_every_packet_is_the_default():
    assert all("telemetry" not in c.switch_cfg["link"] for c in scen.load("web6").cases)  # as recorded before it
    sc = scen.load("web6", {"telemetry": "datagrams", "aqms": ["fifo", "iwa"], "iws": [10]})
    assert [c.switch_cfg["link"]["telemetry"] for c in sc.cases] == ["datagrams", "datagrams"]
    assert [c.name for c in sc.cases] == ["web6-hspa-48p-fifo-iw10", "web6-hspa-48p-iwa-iw10"]  # same pairing units


def test_ipv6_cases_carry_ip6_in_their_name_and_pairing_unit():
    sc = scen.load("web6", {"ip": 6, "aqms": ["fifo", "iwa"], "iws": [10], "irto_s": 3})
    assert sc.ip == 6 and [c.name for c in sc.cases] == ["web6-hspa-48p-fifo-iw10-irto3-ip6",
                                                         "web6-hspa-48p-iwa-iw10-irto3-ip6"]
    assert {c.pair_key for c in sc.cases} == {"web6-hspa-48p-iw10-irto3-ip6"}


def test_ip_is_recorded_in_meta():
    from accessnet.replication import new_meta
    from accessnet.switches import ModelSwitch
    from accessnet.workloads import workloads_for
    for ip in (4, 6):
        sc = scen.load("smoke", {"ip": ip})
        case = sc.cases[0]
        meta = new_meta(sc, case, 0, 1, workloads_for(case.spec, 1), ModelSwitch(1))
        assert meta["ip"] == ip and meta["case"].endswith("-ip6") == (ip == 6)


def test_ipv6_is_refused_before_a_run_where_the_kernel_has_none(monkeypatch):
    from accessnet import replication
    from accessnet.replication import Unit
    sc = scen.load("smoke", {"ip": 6})
    units = [Unit(sc, c, 0, c.name) for c in sc.cases]
    monkeypatch.setattr(replication, "ipv6_missing", lambda: "the kernel has no IPv6 (test)")
    with pytest.raises(ConfigError, match=r"smoke: \[run\] ip = 6 cannot run here: the kernel has no IPv6"):
        replication.preflight(units, "model")
