"""The TNA program's queue (p4src/tofino/queue.p4, twin refmodel/tofino_queue.py) against the v1model
program's (refmodel/queue.py, which BMv2 matches packet for packet): with each second pass right after
its first, the same decisions, backlog and sojourn for every frame, across wraps of the 32-bit clock;
with a packet between the two passes, exactly the errors queue.p4 states; and the ticks that keep an
idle link's tat within serial time."""

import random

import pytest

from experiments.onoff import next_arrival
from refmodel.constants import Aqm, Decision, Reason
from refmodel.params import pipeline_params
from refmodel.queue import QueueModel, tx_ns
from refmodel.tofino_queue import MASK, NO_LIMIT_NS, PASS2_ADD, PASS2_REFUND, TnaQueue, link_limit_ns

MSS_FRAME = 1514


def params(rate_bps: float, bucket_bytes: int, limit_bytes: int | None):
    return pipeline_params(rate_bps, Aqm.FIFO, limit_bytes=limit_bytes or 0, bucket_bytes=bucket_bytes).queue


def run(seed: int, rate_bps: float, bucket_bytes: int, limit_bytes: int | None, seconds: float,
        aqm_drop: float = 0.1, tick_ms: int = 100) -> tuple[int, dict]:
    """The on/off load of the other twins' tests (experiments/onoff.py) through both queues; a share
    ``aqm_drop`` of the frames that fit a busy link is dropped after the queue (as an AQM does: the
    v1model program does not commit them, queue.p4 refunds them). Returns
    the number of frames compared and what the run exercised; asserts at the first difference."""
    q = params(rate_bps, bucket_bytes, limit_bytes)
    limit_tna = q.limit_ns or NO_LIMIT_NS
    rng = random.Random(seed)
    v1, tna = QueueModel(), TnaQueue()
    now, next_tick, n = 1_000, 0, 0
    seen = {"limit": 0, "aqm": 0, "idle": 0, "wraps": 0}
    while now < seconds * 1e9:
        now, length = next_arrival(rng, now, rate_bps)
        while next_tick <= now:  # the packet generator's ticks of this link, in between
            tna.q_tick(next_tick & MASK)
            next_tick += tick_ms * 1_000_000
        seen["wraps"] = now >> 32
        tx = tx_ns(q.byte_time_q16, length)
        pred = v1.predict(q, now, length)
        first = tna.first_pass(now & MASK, tx, q.bucket_ns, limit_tna)
        dropped_by_aqm = not pred.over_limit and pred.backlog_ns > 0 and rng.random() < aqm_drop
        want = Decision.DROP if pred.over_limit or dropped_by_aqm else Decision.PASS
        got, op = first.decision, first.pass2
        if got == Decision.PASS and dropped_by_aqm:   # the AQM's drop: CoDel's and PIE's op | REFUND
            got, op = Decision.DROP, op | PASS2_REFUND
        assert (got, first.backlog_ns, first.sojourn_ns) == (want, pred.backlog_ns, pred.sojourn_ns), \
            f"frame {n} at {now} ns: TNA {first} vs v1model {pred}"
        assert (first.reason == Reason.LIMIT) == pred.over_limit
        if want == Decision.PASS:
            v1.commit(pred)
        tna.second_pass(op, tx)
        seen["limit"] += pred.over_limit
        seen["aqm"] += dropped_by_aqm
        seen["idle"] += pred.backlog_ns == 0
        assert tna.tat == v1.tat & MASK or s_behind(tna.tat, now), f"frame {n}: tat {tna.tat} vs {v1.tat}"
        n += 1
    return n, seen


def s_behind(tat: int, now: int) -> bool:
    """An idle link's tat: the v1model keeps the last frame's end, a tick may have pulled the TNA's up to
    a later instant; both are in the past and mean the same (no backlog)."""
    return ((now & MASK) - tat) & MASK < 1 << 31


@pytest.mark.parametrize("rate_bps,bucket_bytes,limit_bytes", [
    (2e6, 0, 60_000), (2e6, 1514, 60_000), (160e3, 1514, 6_000), (50e6, 3028, 600_000), (10e6, 0, None)])
def test_with_passes_at_once_the_tna_queue_decides_as_the_v1model_queue(rate_bps, bucket_bytes, limit_bytes):
    seconds = 12.0 if rate_bps <= 10e6 else 5.0   # past 2^32 ns (4.3 s): the 32-bit clock wraps
    n, seen = run(7, rate_bps, bucket_bytes, limit_bytes, seconds)
    assert n > 150 and seen["aqm"] > 10 and seen["idle"] > 0 and seen["wraps"] >= 1, seen
    if limit_bytes is not None:
        assert seen["limit"] > 0, seen   # the overload reached the buffer


def test_a_mutation_is_caught(monkeypatch):
    """The comparison can fail: a second pass that forgets the refund is found at the next frame."""
    monkeypatch.setattr(TnaQueue, "q_refund", lambda self, tx: None)
    with pytest.raises(AssertionError, match="frame"):
        run(7, 2e6, 0, 60_000, 2.0)


def test_a_frame_between_an_idle_links_two_passes_costs_the_time_between_them():
    """queue.p4: a second frame arriving between the first one's passes sees the link idle too; the link
    ends busy until now2 + tx1 + tx2 rather than now1 + tx1 + tx2."""
    q = params(2e6, 0, 60_000)
    tx = tx_ns(q.byte_time_q16, MSS_FRAME)
    t = TnaQueue()
    a = t.first_pass(10_000, tx, q.bucket_ns, q.limit_ns)
    b = t.first_pass(10_400, tx, q.bucket_ns, q.limit_ns)   # 400 ns later, before a's second pass
    assert a.pass2 == b.pass2 == PASS2_ADD and a.backlog_ns == b.backlog_ns == 0
    t.second_pass(a.pass2, tx)
    t.second_pass(b.pass2, tx)
    v1 = QueueModel()
    for now in (10_000, 10_400):
        v1.commit(v1.predict(q, now, MSS_FRAME))
    assert t.tat - v1.tat == 400                       # the time between the passes, once
    assert v1.predict(q, 10_800, MSS_FRAME).backlog_ns == 2 * tx - 800   # b waited behind a ...
    assert b.backlog_ns == 0                          # ... but the TNA said it did not


def test_a_frame_between_a_drops_two_passes_sees_one_frame_too_much():
    """queue.p4: a dropped frame's time stays in tat until its second pass refunds it; a frame in between
    sees that one frame's tx too much, and after the refund tat is the v1model's."""
    q = params(2e6, 0, 60_000)
    tx = tx_ns(q.byte_time_q16, MSS_FRAME)
    t, v1 = TnaQueue(), QueueModel()
    for now in (0, 100):                               # a busy link: two frames in
        first = t.first_pass(now, tx, q.bucket_ns, q.limit_ns)
        t.second_pass(first.pass2, tx)
        v1.commit(v1.predict(q, now, MSS_FRAME))
    dropped = t.first_pass(200, tx, q.bucket_ns, q.limit_ns)   # an AQM drops it: refund due
    between = t.first_pass(300, tx, q.bucket_ns, q.limit_ns)
    assert between.backlog_ns - v1.predict(q, 300, MSS_FRAME).backlog_ns == tx
    t.second_pass(dropped.pass2 | PASS2_REFUND, tx)
    t.second_pass(between.pass2, tx)
    v1.commit(v1.predict(q, 300, MSS_FRAME))
    assert t.tat == v1.tat


def test_ticks_keep_an_idle_links_tat_within_serial_time():
    """Without ticks, a link idle for more than 2^31 ns (2.1 s) has a tat that serial comparison puts in
    the future: its next frame would see a backlog of seconds. One tick per second prevents it, and a
    tick returns the queue's delay (PIE's qdelay)."""
    q = params(2e6, 0, None)
    tx = tx_ns(q.byte_time_q16, MSS_FRAME)
    quiet, ticked = TnaQueue(), TnaQueue()
    for t in (quiet, ticked):
        t.second_pass(t.first_pass(0, tx, q.bucket_ns, NO_LIMIT_NS).pass2, tx)
        assert t.q_tick(tx - 1000) == 1000            # 1 us of the frame left: the delay
    later = 3_000_000_000                              # 3 s: past 2^31 ns
    for s in range(1, 3):
        ticked.q_tick(s * 1_000_000_000)
    assert ticked.first_pass(later, tx, q.bucket_ns, NO_LIMIT_NS).backlog_ns == 0
    assert quiet.first_pass(later, tx, q.bucket_ns, NO_LIMIT_NS).backlog_ns > 1_000_000_000


def packet_limit_run(seed: int, rate_bps: float, limit_pkts: int, bucket_bytes: int, seconds: float,
                     full: bool = True, limit_ns=link_limit_ns) -> tuple[int, int, int]:
    """The on/off load (every frame full-size when ``full``) through the v1model pfifo and the TNA queue
    with ``limit_ns(queue)`` as its byte limit, passes at once. Returns (frames, pfifo drops, frames the
    two decided differently)."""
    q = pipeline_params(rate_bps, Aqm.FIFO, limit_pkts=limit_pkts, bucket_bytes=bucket_bytes).queue
    limit = limit_ns(q)
    rng = random.Random(seed)
    v1, tna = QueueModel(), TnaQueue()
    now, next_tick, n, drops, differ = 1_000, 0, 0, 0, 0
    while now < seconds * 1e9:
        now, length = next_arrival(rng, now, rate_bps)
        length = MSS_FRAME if full else length
        while next_tick <= now:
            tna.q_tick(next_tick & MASK)
            next_tick += 100_000_000
        tx = tx_ns(q.byte_time_q16, length)
        pred = v1.predict(q, now, length)
        first = tna.first_pass(now & MASK, tx, q.bucket_ns, limit)
        tna.second_pass(first.pass2, tx)
        if not pred.over_limit:
            v1.commit(pred)
        drops += pred.over_limit
        differ += (first.decision == Decision.DROP) != pred.over_limit
        n += 1
    return n, drops, differ


@pytest.mark.parametrize("rate_bps,limit_pkts,bucket_bytes", [
    (2e6, 48, 1514), (2e6, 48, 0), (2e6, 20, 3028), (160e3, 14, 1514), (50e6, 250, 1514)])
def test_with_full_frames_the_byte_limit_decides_as_the_packet_limit(rate_bps, limit_pkts, bucket_bytes):
    """link_limit_ns: the TNA program has no packet ring; L tx(1514) + bucket decides as pfifo's L for
    every full-size frame, across the 32-bit clock's wrap."""
    n, drops, differ = packet_limit_run(3, rate_bps, limit_pkts, bucket_bytes, 10.0 if rate_bps < 1e7 else 5.0)
    assert n > 150 and drops > 40 and differ == 0


def test_the_bucket_is_part_of_the_packet_limits_byte_equivalent():
    """Without the bucket's term (the frame in tbf's bucket is not queued) the limit drops too early."""
    def naive(q):
        return q.limit_pkts * tx_ns(q.byte_time_q16, MSS_FRAME)
    assert packet_limit_run(3, 2e6, 48, 1514, 10.0, limit_ns=naive)[2] > 0


def test_smaller_frames_count_whole_in_a_packet_limit_and_by_their_bytes_in_the_tna():
    """With the on/off load's mix (a fifth of the frames 90 B, a fifth 600 B) the byte limit admits frames
    pfifo drops: tools/pfifo_bytes.py measures what that does to the seeds' audio."""
    n, drops, differ = packet_limit_run(3, 2e6, 48, 1514, 10.0, full=False)
    assert differ > drops / 2
