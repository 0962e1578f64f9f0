"""The TNA program's PIE (p4src/tofino/pie.p4, twin refmodel/tofino_pie.py) decides as the v1model
program's (refmodel/pie.py, which BMv2 matches packet for packet) when that one's updates come at the
same instants: on the packet generator's ticks, as RFC 8033's timer. The same queue and offered load run
through both; they drop the same packets, and p stays within a few units of 2^-31 of pie.py's."""

import random

import pytest

from experiments.onoff import next_arrival
from refmodel.constants import Aqm, Reason
from refmodel.params import ConfigError, pie_params, pipeline_params
from refmodel.pie import Pie
from refmodel.queue import QueueModel
from refmodel import tofino_pie
from refmodel.tofino_pie import E_KEYS, TnaPie, pie_knobs, term_keys, term_row

WRAP = 1 << 32


class TickedPie(Pie):
    """pie.py with its update moved from packets to ticks: the same ``_update``, called on the first tick
    at least tupdate after the previous one; ``decide`` then only decides."""

    def tick(self, pp, now: int, qdelay: int) -> None:
        if now - self.last_update >= pp.tupdate_ns:
            self._update(pp, min(qdelay, 0xFFFFFFFF))
            self.last_update = now

    def decide(self, pp, qp, q, rand):
        last, self.last_update = self.last_update, q.now
        try:
            return super().decide(pp, qp, q, rand)
        finally:
            self.last_update = last


def run(seed: int, rate_bps: float, seconds: float, off_ms: int = 1500, load_on: float = 1.3,
        pie: dict | None = None, limit_ms: float = 400):
    """On/off load (2 s at ``load_on`` times the link's rate, ``off_ms`` at half of it) through one queue
    and both PIEs, a tick every tupdate; returns (first packet where they disagree or None, what the run
    exercised and how far p drifted)."""
    p = pipeline_params(rate_bps, Aqm.PIE, limit_bytes=int(limit_ms / 1000 * rate_bps / 8), pie=pie)
    q, pp = p.queue, p.pie
    k = pie_knobs(pp, q.mtu_ns)
    rng = random.Random(seed)
    queue, ref, tna = QueueModel(), TickedPie(), TnaPie()
    now = 3 * WRAP + 700_000_000        # the 32-bit clock wraps every 4.3 s: several times per run
    end = now + int(seconds * 1e9)
    seen = {"drops": 0, "burst": 0, "updates": 0, "low": 0, "decay": 0, "drift": 0, "max_p": 0, "ties": 0}
    n = 0
    next_tick = now
    while now < end:
        now, size = next_arrival(rng, now, rate_bps, load_on, off_ms=off_ms)
        while next_tick < now:
            qdelay = max(queue.tat, next_tick) - next_tick     # what q_tick returns
            before = ref.last_update
            ref.tick(pp, next_tick, qdelay)
            if ref.last_update == before:
                return ("tick", next_tick), seen
            seen["decay"] += qdelay == 0 and tna.old == 0 and tna.p > 0
            tna.second_pass(k, tna.tick(k, qdelay))
            seen["updates"] += 1
            seen["low"] += tna.gate == 0 and tna.p > 0    # the low-delay rule holds p back
            seen["drift"] = max(seen["drift"], abs(2 * tna.p - ref.p))
            seen["max_p"] = max(seen["max_p"], ref.p)
            if (tna.used, tna.old) != (ref.burst_used, ref.qdelay_old):
                return ("state", next_tick), seen
            next_tick += pp.tupdate_ns
        pred = queue.predict(q, now, size)
        n += 1
        rand = rng.getrandbits(32)
        v = ref.decide(pp, q, pred, rand)
        if pred.over_limit:
            continue                                           # the buffer's (queue.p4): PIE never sees it
        drop, burst = tna.decide(k, pred.backlog_ns, rand)
        if drop != v.drop or burst != (v.reason == Reason.PIE_BURST):
            if abs((rand >> 1) - tna.gate) > 512:              # not a draw within p's drift of p
                return n, seen
            seen["ties"] += 1
        seen["drops"] += drop
        seen["burst"] += burst
        if not v.drop:
            queue.commit(pred)
    return None, seen


@pytest.mark.parametrize("seed,rate", [(1, 2e6), (2, 10e6), (3, 1e6), (4, 40e6)])
def test_tna_pie_decides_as_the_v1model_pie_on_ticks(seed, rate):
    where, seen = run(seed, rate, seconds=20)
    assert where is None, f"the TNA steps differ from refmodel/pie.py at {where} ({seen})"
    # the run took every path: the burst allowance, the low-delay rule, random drops, decay when idle,
    # and p high enough for the 2 % cap (p >= 0.1, Q32)
    assert seen["drops"] >= 20 and seen["burst"] >= 10 and seen["low"] >= 10 and seen["decay"] >= 10, seen
    assert seen["max_p"] >= 429_496_730, seen
    # p's drift from pie.py's, after every one of the run's 1334 updates: at most 2^-22 of probability (seen:
    # up to 177 units of 2^-32), so a draw decides differently only within that of p, and none did
    assert seen["drift"] <= 1024 and seen["ties"] == 0, seen


def test_deep_overload_drives_p_to_its_cap_and_back():
    """Five times the rate for 2 s (queue past 250 ms: the +2 % rule), then quiet: p rises to its clamp and
    decays to 0; the two still agree."""
    where, seen = run(7, 2e6, seconds=15, load_on=5.0, off_ms=3000, limit_ms=1500)
    assert where is None and seen["max_p"] >= 0.5 * (1 << 32), (where, seen)


def test_a_slower_update_and_other_coefficients():
    where, seen = run(5, 5e6, seconds=15, pie={"target_s": 0.020, "tupdate_s": 0.030, "alpha": 0.25, "beta": 2.5})
    assert where is None and seen["drops"] >= 20, (where, seen)


def test_a_broken_step_is_caught():
    """The comparison can fail: without the 2 % cap (every step taken whole) the two differ."""
    orig = tofino_pie.scale
    tofino_pie.scale = lambda p: (orig(p)[0], tofino_pie.CAP_NONE)
    try:
        where, _ = run(1, 2e6, seconds=20)
    finally:
        tofino_pie.scale = orig
    assert where is not None


def test_term_rows_are_the_scaled_products_of_pie_py():
    """A row is alpha*|d| >> 17 (Q48 -> Q31) of d's leading bits, shifted by the RFC's scale, floored."""
    k = pie_params().beta_q48
    for e_key, m in term_keys():
        assert 0 <= e_key < E_KEYS and 0 <= m < 128
    assert term_row(k, 0, 11, 100) == (100 * k) >> 17
    assert term_row(k, 1, 11, 100) == -((100 * k + (1 << 17) - 1) >> 17)
    assert term_row(k, 0, 11 - 3, 100) == (100 * k) >> 20
    assert term_row(k, 0, 35, 127) == (1 << 31) - 1          # saturated at +1
    assert term_row(k, 1, 35, 127) == -((1 << 31) - 1)


def test_scale_rows_are_pie_pys_ranges():
    """pie_scale's ternary prefixes (the controller writes them) give every p the shift and cap of pie.py's
    ranges: exactly one row matches, at each range's ends and at random p."""
    rows = tofino_pie.scale_rows()
    edges = [b + d for b, _ in tofino_pie.SCALE for d in (-1, 0)] + [0, tofino_pie.P_MAX]
    rng = random.Random(3)
    for p in edges + [rng.getrandbits(31) >> rng.randrange(31) for _ in range(20_000)]:
        hit = [(k, cap) for v, m, k, cap in rows if p & m == v]
        sh, cap = tofino_pie.scale(p)
        assert hit == [(tofino_pie.E_OFFSET - sh, cap)], p


def test_links_beyond_serial_time_are_refused():
    pie_knobs(pie_params(max_burst_s=2.0), mtu_ns=6056)
    with pytest.raises(ConfigError, match="2\\^31"):
        pie_knobs(pie_params(max_burst_s=2.2), mtu_ns=6056)
