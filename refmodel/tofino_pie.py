"""PIE as the TNA program runs it (twin of ``p4src/tofino/pie.p4``).

``pie.py`` is RFC 8033's PIE as the v1model program runs it: four registers read, the drop
probability updated on the first packet at least ``tupdate`` after the previous update, written
back. On a Tofino a data packet cannot take that update's chain of products between reading and
writing ``p``, so pie.p4 moves it where the RFC has it, to a timer: the packet generator's tick
of the link, every ``tupdate``. Data packets only read. This module is pie.p4's steps, one method per
RegisterAction (named as there) and one function per table, so that ``tests/test_tofino_pie.py``
can show that they decide as ``pie.py`` does when its updates come at the same instants.

The tick's update, pie.py's ``_update`` in 32-bit steps:

* ``qdelay`` = tat' - now, what q_tick returns; ``qdelay_old`` swapped in ``pie_old``;
* each of ``alpha * (qdelay - target)`` and ``beta * (qdelay - qdelay_old)`` from one exact
  table per coefficient (``term_row``), keyed by the difference's sign, its 7 leading bits and
  their place (``arith.mantissa``) less the RFC's scale shift for the current ``p`` (p's
  ranges as ternary prefixes, ``scale_rows``): the row is already the scaled term in Q31, floored, saturated at ±1;
* the sum (saturating), the 2 % cap above p = 10 %, the +2 % above 250 ms, the clamp to [0, 1)
  and the 1/64 decay, as pie.py;
* the tick's second pass (a resubmission: ``p`` was read in the first) takes the burst
  allowance (``pie_burst``) and writes ``p`` (``pie_p``) and the *gate* (``pie_gate``), the
  probability data packets test their draw against: ``p``, or 0 while the RFC's low-delay rule
  holds, or BURST while the burst allowance lasts. (Two registers, not a pair: a register's
  actions share one stage, and the tick reads p early where data packets read the gate late.)

Probabilities are Q31 (``p`` below 2^31 fits the pipeline's signed 32-bit arithmetic with its
saturating adds), where pie.py's are Q32; a data packet tests ``rand >> 1 < p``, which is pie.py's
``rand < 2 p``. Each term is floored on its own (pie.py floors their sum): an update's step is
within 2 Q31 units (5e-10) of pie.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from .arith import mantissa
from .params import ConfigError, PieParams, PipelineParams
from .pie import DELAY_250MS, SCALE_STEPS

MASK = 0xFFFFFFFF
P_MAX = (1 << 31) - 1  # p in Q31: at most 1 - 2^-31
TERM_MAX = (1 << 31) - 1  # a term saturates at +-1 (Q31)
TWO_PERCENT = 42_949_673  # 0.02 in Q31
TENTH = 214_748_365  # 0.1 (pie.py's Q32 TENTH / 2)
FIFTH = 429_496_730  # 0.2
BURST = 0x80000000  # the gate while the burst allowance lasts: negative, below every draw
COEF_TO_Q31 = 17  # alpha/beta are Q48 per ns (params.PIE_COEF_FRAC): a product >> 17 is Q31
E_OFFSET = 11  # a term table's exponent key: e - shift + 11 (the largest shift), never negative
E_KEYS = 36  # e <= 24 (|d| < 2^31), shift 0..11
# p (Q31) below this: shift the step right by (pie.py's SCALE_STEPS, halved and rounded up, so that
# p31 < bound exactly when pie.py's p = 2 p31 is below its bound)
SCALE = tuple(((b + 1) // 2, sh) for b, sh in SCALE_STEPS)
CAP_NONE = (1 << 31) - 1  # no cap below p = 10 %


def scale(p: int) -> tuple[int, int]:
    """What pie_scale (ternary prefixes of p's ranges, scale_rows) gives p: (the step's shift, its cap)."""
    for bound, sh in SCALE:
        if p < bound:
            return sh, CAP_NONE
    return 0, TWO_PERCENT


def prefixes(lo: int, hi: int, bits: int = 32) -> list[tuple[int, int]]:
    """[lo, hi] as (value, mask) prefixes of a ``bits``-bit word, fewest first-fit (a TCAM's range)."""
    out, full = [], (1 << bits) - 1
    while lo <= hi:
        size = (lo & -lo) if lo else 1 << bits
        while size > hi - lo + 1:
            size >>= 1
        out.append((lo, full ^ (size - 1)))
        lo += size
    return out


def scale_rows() -> list[tuple[int, int, int, int]]:
    """pie_scale's ternary rows (value, mask, exponent key offset = E_OFFSET - shift, cap): p's ranges of
    ``SCALE`` and p >= 0.1 as prefixes (bf-p4c takes no range match on a 32-bit key)."""
    out, lo = [], 0
    for bound, sh in SCALE:
        out += [(v, m, E_OFFSET - sh, CAP_NONE) for v, m in prefixes(lo, bound - 1)]
        lo = bound
    return out + [(v, m, E_OFFSET, TWO_PERCENT) for v, m in prefixes(lo, P_MAX)]


def sat(x: int) -> int:
    """the pipeline's saturating signed 32-bit result"""
    return max(-(1 << 31), min(x, (1 << 31) - 1))


def term_row(k: int, neg: int, e_key: int, m: int) -> int:
    """One row of a coefficient's term table: sign * (m * k) << (e - shift), in Q31 (>> 17 from Q48),
    floored (towards minus infinity, as pie.py's arithmetic shift), saturated at +-1."""
    x, s = m * k, e_key - E_OFFSET - COEF_TO_Q31
    if s >= 0:
        v = -(x << s) if neg else x << s
    else:
        v = -((x + (1 << -s) - 1) >> -s) if neg else x >> -s
    return max(-TERM_MAX, min(v, TERM_MAX))


def term_keys() -> list[tuple[int, int]]:
    """(e_key, m) pairs a difference can take: m < 64 only when e = 0 (|d| < 128)."""
    out = []
    for sh in sorted({sh for _, sh in SCALE} | {0}):
        out += [(E_OFFSET - sh, m) for m in range(64)]
    out += [(e_key, m) for e_key in range(E_KEYS) for m in range(64, 128)]
    return sorted(set(out))


def term(k: int, d: int, sh: int) -> int:
    """What pie_lead (a TCAM on |d| and the shift) and pie_term (exact) give for difference d."""
    e, m = mantissa(abs(d))
    return term_row(k, int(d < 0), e - sh + E_OFFSET, m)


@dataclass(frozen=True)
class PieKnobs:
    """pie_cfg's action data for one link (p4src/tofino/types.p4: pie_cfg_t)."""

    target_ns: int
    half_ns: int  # target / 2: the low-delay rule's bound
    tupdate_ns: int
    max_burst_ns: int
    mtu2_ns: int  # two frames: a shorter queue never drops
    alpha_q48: int  # (the term tables' profile holds these)
    beta_q48: int


def pie_knobs(p: PieParams, mtu_ns: int) -> PieKnobs:
    """The knobs of a link; its times must be serial (under 2^31 ns) with the burst allowance's growth."""
    if p.max_burst_ns + p.tupdate_ns >= 1 << 31 or p.target_ns >= 1 << 31:
        raise ConfigError("pie: target and max_burst + tupdate must stay under 2^31 ns on Tofino "
                          "(p4src/tofino/pie.p4: 32-bit signed arithmetic)")
    return PieKnobs(p.target_ns, p.target_ns // 2, p.tupdate_ns, p.max_burst_ns, 2 * mtu_ns, p.alpha_q48,
                    p.beta_q48)


def tick_period_bounds(p: PipelineParams) -> tuple[int, int]:
    """The packet generator's period a PIE link takes: exactly its ``tupdate`` (every tick is an update)."""
    return p.pie.tupdate_ns, p.pie.tupdate_ns


@dataclass(frozen=True)
class Pass2:
    """What a due tick's first pass leaves for its second (p4src/tofino/types.p4: pass2_h)."""

    p: int  # the new p (Q31): pass2.base
    flags: int  # QLOW | OLDLOW | PLOW: pass2.count


QLOW = 2  # qdelay < target / 2
OLDLOW = 4  # the previous qdelay < target / 2
PLOW = 8  # the new p < 0.2
OPEN = 0xC0000000  # what the second pass hands gate_write for "the gate is p" (no gate is this: p < 2^31)


class TnaPie:
    """One link's four registers: pie_p, pie_gate, pie_old, pie_burst."""

    def __init__(self) -> None:
        self.p = 0
        self.gate = BURST  # pie_gate's initial value: the burst allowance starts full
        self.old = 0
        self.used = 0

    # --- pie_p
    def p_read(self) -> int:
        return self.p

    def p_write(self, p: int) -> None:
        self.p = p

    # --- pie_gate
    def gate_read(self) -> int:
        return self.gate

    def gate_write(self, p: int, wg: int) -> None:
        self.gate = p if wg == OPEN else wg

    # --- pie_old
    def old_swap(self, qdelay: int) -> int:
        old, self.old = self.old, qdelay
        return old

    # --- pie_burst
    def burst_reset(self) -> int:
        self.used = 0
        return 0

    def burst_add(self, max_burst: int, tupdate: int) -> int:
        if self.used < max_burst:
            self.used += tupdate
        return self.used

    # --- a tick (every tick of a PIE link is an update: the packet generator's period is tupdate)
    def tick(self, k: PieKnobs, qdelay: int) -> Pass2:
        """A tick's first pass: ``qdelay`` is what q_tick returned (tat' - now). Returns its second pass.
        p's new value is pie.py's p + (min(step, cap) + bump), clamped to [0, 1), taken as
        (p + bump) + max(min(alpha term + beta term, cap), -(p + bump)): one operation a stage."""
        p_old = self.p_read()
        old = self.old_swap(qdelay)
        sh, cap = scale(p_old)
        bump = TWO_PERCENT if qdelay > DELAY_250MS else 0
        pb = sat(p_old + bump)
        step = min(sat(term(k.alpha_q48, qdelay - k.target_ns, sh) + term(k.beta_q48, qdelay - old, sh)), cap)
        p = sat(pb + max(step, -pb))
        if qdelay == 0 and old == 0:
            p -= p >> 6
        flags = (QLOW if qdelay < k.half_ns else 0) | (OLDLOW if old < k.half_ns else 0) \
            | (PLOW if p < FIFTH else 0)
        return Pass2(p, flags)

    def second_pass(self, k: PieKnobs, p2: Pass2) -> None:
        """The tick's second pass: the burst allowance, then p and the gate data packets test."""
        if p2.p == 0 and p2.flags & QLOW and p2.flags & OLDLOW:
            used = self.burst_reset()
        else:
            used = self.burst_add(k.max_burst_ns, k.tupdate_ns)
        if max(k.max_burst_ns - used, 0):
            wg = BURST
        elif p2.flags & QLOW and p2.flags & PLOW:
            wg = 0  # the RFC's low-delay rule
        else:
            wg = OPEN
        self.p_write(p2.p)
        self.gate_write(p2.p, wg)

    # --- a data packet
    def decide(self, k: PieKnobs, backlog_ns: int, rand: int) -> tuple[bool, bool]:
        """A frame that fits the buffer: (drop, burst allowance active)."""
        g = self.gate_read()
        if g & BURST:
            return False, True
        eligible = min(backlog_ns - k.mtu2_ns, 0) == 0
        return eligible and max(g - (rand >> 1), 0) != 0, False
