"""Paired comparisons (issue 11 item 5): within one replication number every AQM of a scenario sees the same
random draws (start times, sizes, traffic-tool and switch seeds); profiles, buffers and IWs draw apart."""

from __future__ import annotations

from accessnet import scenario as scen
from accessnet.workloads import plan_of, workloads_for


def plans(sc: scen.Scenario, rep: int) -> dict[str, tuple[str, int, dict]]:
    out = {}
    for c in sc.cases:
        seed = c.rep_seed(sc.seed, rep)
        out[c.name] = (c.pair_key, seed, plan_of(workloads_for(c.spec, seed)))
    return out


def test_every_aqm_of_a_replication_gets_the_same_draws():
    sc = scen.load("web6", {"aqms": ["fifo", "red", "redok", "codel", "pie", "iwa"], "iws": [3, 10]})
    for rep in range(5):
        by_pair: dict[str, set] = {}
        for key, seed, plan in plans(sc, rep).values():
            by_pair.setdefault(key, set()).add((seed, repr(plan)))
        assert len(by_pair) == 2  # IW3 and IW10 (redok's own buffer does not unpair it)
        for key, draws in by_pair.items():
            assert len(draws) == 1, (key, draws)  # all six AQMs: one seed, one plan


def test_draws_differ_across_reps_iws_profiles_and_buffers():
    sc = scen.load("web6", {"aqms": ["fifo", "iwa"], "iws": [3, 10]})
    starts = {plan["bursts"][0]["start_s"] for p in range(4) for _, _, plan in plans(sc, p).values()}
    assert len(starts) == 4 * 2  # 4 reps x 2 IWs, each its own draw, shared by the 2 AQMs
    seeds = {c.rep_seed(1, 0) for p in ("hspa", "lte") for b in ("bdp", "2bdp")
             for c in scen.load("web6", {"aqms": ["fifo"], "iws": [10], "profile": p, "buffer": b}).cases}
    assert len(seeds) == 4


def test_the_scenario_seed_moves_every_draw():
    a = scen.load("web6", {"aqms": ["fifo"], "iws": [10]})
    b = scen.load("web6", {"aqms": ["fifo"], "iws": [10], "seed": 2})
    assert a.cases[0].rep_seed(a.seed, 0) != b.cases[0].rep_seed(b.seed, 0)
    assert a.cases[0].rep_seed(a.seed, 0) == scen.load("web6", {"aqms": ["iwa"], "iws": [10]}).cases[0].rep_seed(1, 0)


def test_every_aqm_of_an_ipv6_replication_pairs_and_ipv6_draws_apart_from_ipv4():
    """[run] ip is part of the pairing unit: the AQMs of an IPv6 case share their draws, and the IPv6 case is
    a design of its own (its own seed), not the IPv4 one's twin."""
    v4 = scen.load("web6", {"aqms": ["fifo", "red", "iwa"], "iws": [10]})
    v6 = scen.load("web6", {"aqms": ["fifo", "red", "iwa"], "iws": [10], "ip": 6})
    for rep in range(3):
        six = plans(v6, rep)
        assert len({(key, seed, repr(plan)) for key, seed, plan in six.values()}) == 1
        (key6, seed6, _), = {(k, s, "") for k, s, _ in six.values()}
        (key4, seed4, _), = {(k, s, "") for k, s, _ in plans(v4, rep).values()}
        assert key6 == key4 + "-ip6" and seed6 != seed4


def test_both_webrtc_stacks_of_a_case_draw_the_same_plan(tmp_path, monkeypatch):
    """[webrtc] stack names a case (-pion) and its own pairing unit (each stack's AQMs pair with its FIFO), but
    not its draws: aiortc and Pion meet the same web users in replication k (issue 35 item 3)."""
    fake = tmp_path / "pion-rtc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(scen, "PION_BINARY", fake)
    aio = scen.load("webrtc5", {"aqms": ["fifo", "iwa"]})
    pion = scen.load("webrtc5", {"aqms": ["fifo", "iwa"]}, "pion")
    assert [c.name for c in pion.cases] == ["webrtc5-rtc50-50p-fifo-iw10-pion", "webrtc5-rtc50-50p-iwa-iw10-pion"]
    assert [c.name for c in aio.cases] == ["webrtc5-rtc50-50p-fifo-iw10", "webrtc5-rtc50-50p-iwa-iw10"]
    for rep in range(3):
        a, p = plans(aio, rep), plans(pion, rep)
        assert {k for k, _, _ in a.values()} == {"webrtc5-rtc50-50p-iw10"}
        assert {k for k, _, _ in p.values()} == {"webrtc5-rtc50-50p-iw10-pion"}
        (seed_a,), (seed_p,) = {s for _, s, _ in a.values()}, {s for _, s, _ in p.values()}
        assert seed_a == seed_p
        plan_a = next(iter(a.values()))[2]
        plan_p = next(iter(p.values()))[2]
        assert plan_a["workloads"]["webrtc"]["stack"] == "aiortc" and plan_p["workloads"]["webrtc"]["stack"] == "pion"
        assert plan_a["workloads"]["users"] == plan_p["workloads"]["users"] and plan_a["bursts"] == plan_p["bursts"]
