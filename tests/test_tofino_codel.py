"""The TNA program's CoDel (p4src/tofino/codel.p4, twin refmodel/tofino_codel.py) makes the v1model
program's decisions (refmodel/codel.py, which BMv2 matches packet for packet): the same queues and
offered loads, run through both, drop the same packets and leave the same state, across wraps of the
32-bit clock, with the packet generator's ticks every 100 ms."""

import random

import pytest

from experiments.onoff import next_arrival
from refmodel.codel import Codel
from refmodel.constants import Aqm
from refmodel.params import ConfigError, codel_params, pipeline_params
from refmodel.queue import QueueModel
from refmodel.arith import s32
from refmodel.codel import coarse
from refmodel.tofino_codel import FLAGS, MASK, TnaCodel, codel_knobs

WRAP = 1 << 32


def run(seed: int, rate_bps: float, bucket_bytes: int, seconds: float, codel: dict | None = None,
        off_ms: int = 1500, tick_ms: int | None = 100, limit_ms: float = 300):
    """On/off load (2 s at 1.3 times the link's rate, ``off_ms`` at half of it: the queue stands, then
    drains) through one queue (a buffer of ``limit_ms``) and both CoDels, a tick every ``tick_ms``
    (None: none); returns the first packet where they disagree (or None) and what the run exercised."""
    limit_bytes = int(limit_ms / 1000 * rate_bps / 8)
    p = pipeline_params(rate_bps, Aqm.CODEL, limit_bytes=limit_bytes, bucket_bytes=bucket_bytes, codel=codel)
    q, c = p.queue, p.codel
    knobs = codel_knobs(c, q.bucket_ns, q.limit_ns, law=0)
    rng = random.Random(seed)
    queue, ref, tna = QueueModel(), Codel(), TnaCodel()
    now = 5 * WRAP * 16 - 3_000_000_000      # the 32-bit clocks wrap: CoDel's 16 ns one 3 s in, the ns one too
    end = now + int(seconds * 1e9)
    seen = {"drops": 0, "entries": 0, "recent_entries": 0, "continuing": 0, "tail": 0}
    n = 0
    next_tick = now
    want_fa = want_dn = 0
    ref_fa = ref_dn = 0
    while now < end:
        now, size = next_arrival(rng, now, rate_bps, off_ms=off_ms)
        while tick_ms and next_tick < now:
            tna.tick(knobs, next_tick)
            back = (coarse(next_tick) + knobs.recent_offset) & MASK     # what the tick does to the expected state
            want_fa = back | 1 if want_fa != 0 and s32(want_fa - (back | 1)) < 0 else want_fa
            want_dn = back if s32(want_dn - back) < 0 else want_dn
            next_tick += tick_ms * 1_000_000
        pred = queue.predict(q, now, size)
        n += 1
        v = ref.decide(c, q, pred)
        if pred.over_limit:
            seen["tail"] += 1
            assert v.drop
            continue
        tat = pred.tat_new if pred.tat > now else now          # what q_admit returns
        tx = pred.tat_new - max(pred.tat, now)
        p2 = tna.first_pass(knobs, tat & MASK, now, tx, q.mtu_ns, q.bucket_ns)
        if (p2 is not None) != v.drop:
            return n, seen
        if p2 is not None:
            seen["drops"] += 1
            if p2.enter:
                seen["entries"] += 1
                seen["recent_entries"] += p2.count > 1
            else:
                seen["continuing"] += 1
            tna.second_pass(c, p2)
        else:
            queue.commit(pred)
        # the v1model state, as the ticks leave it in the TNA registers
        if ref.first_above != ref_fa:
            ref_fa = ref.first_above
            want_fa = ref_fa & MASK
        if ref.drop_next != ref_dn:
            ref_dn = ref.drop_next
            want_dn = ref_dn & MASK
        state = (tna.fa, tna.drop_next, tna.count & ~FLAGS, tna.dropping)
        want = (want_fa, want_dn, min(ref.count, 0xFFFF), int(ref.dropping))
        if tick_ms and state != want:
            seen["state"], seen["want"] = state, want
            return n, seen
    return None, seen


@pytest.mark.parametrize("seed,rate,bucket", [(1, 2e6, 1514), (2, 10e6, 3028), (3, 1e6, 0), (4, 40e6, 15140)])
def test_tna_codel_decides_as_the_v1model_codel(seed, rate, bucket):
    where, seen = run(seed, rate, bucket, seconds=30)
    assert where is None, f"the TNA steps differ from refmodel/codel.py at packet {where} ({seen})"
    # the run took every path: entries with and without a recent drop, continuing drops
    assert seen["entries"] >= 3 and seen["recent_entries"] >= 1 and seen["continuing"] >= 10, seen


def test_ticks_keep_a_long_quiet_link_within_serial_time():
    """After 45 s at half the rate (no drops), the last drop_next is more than 2^31 of CoDel's 16 ns units
    old: without ticks its serial comparison says "recent" again on some entry, and decisions differ."""
    where, seen = run(6, 2e6, 1514, seconds=150, off_ms=45_000)
    assert where is None and seen["entries"] >= 3, (where, seen)
    untick, _ = run(6, 2e6, 1514, seconds=150, off_ms=45_000, tick_ms=None)
    assert untick is not None


def test_a_shorter_interval_and_target_too():
    where, seen = run(5, 5e6, 1514, seconds=20, codel={"target_s": 0.002, "interval_s": 0.040})
    assert where is None and seen["continuing"] >= 10, (where, seen)


def test_a_broken_step_is_caught():
    """The comparison can fail: CoDel without the 'recent' rule (every entry count 1) differs."""
    orig = TnaCodel.dn_enter

    def forgetful(self, t, t16):
        return orig(self, t, t - (1 << 31))          # the last drop is never recent
    TnaCodel.dn_enter = forgetful
    try:
        where, _ = run(1, 2e6, 1514, seconds=30)
    finally:
        TnaCodel.dn_enter = orig
    assert where is not None


def test_links_beyond_serial_time_are_refused():
    codel_knobs(codel_params(interval_s=1.8), bucket_ns=1_000_000, limit_ns=300_000_000, law=0)
    with pytest.raises(ConfigError, match="2\\^35"):
        codel_knobs(codel_params(interval_s=2.0), bucket_ns=0, limit_ns=0, law=0)
