"""Arithmetic a Tofino pipeline can do, and the tables the controller writes for it.

A Tofino stage adds, subtracts, compares and shifts by constants; it does not
multiply two run-time values. Both programs (p4src/include/ for v1model,
p4src/tofino/ for TNA) therefore look products up in tables the controller
fills from the same parameters, and the reference model computes exactly what
the tables give. Each function here says what the data plane computes and
bounds its error against the exact product; docs/arithmetic.md lists every
approximation with its measured effect on the AQM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .constants import BYTE_TIME_FRAC
from .errors import ConfigError

TX_LO_BITS = 6  # len = 64 * hi + lo (p4src/tofino/link.p4: tx_time_hi, tx_time_lo)
MAX_FRAME = 16383 + 14  # the largest frame the tables cover: IPv4 total length < 2^14, plus Ethernet
TX_HI_ENTRIES = (MAX_FRAME >> TX_LO_BITS) + 1
TX_LO_ENTRIES = 1 << TX_LO_BITS
RATE_CLASSES = 64  # p4src/tofino/link.p4: RATE_CLASSES


@dataclass(frozen=True)
class TxSplit:
    """One rate class's two transmit-time tables: hi[len >> 6] + lo[len & 63] ns."""

    hi: tuple[int, ...]
    lo: tuple[int, ...]

    def tx_ns(self, length: int) -> int:
        if not 0 <= length <= MAX_FRAME:
            raise ValueError(f"frame length {length} outside 0..{MAX_FRAME}")
        return self.hi[length >> TX_LO_BITS] + self.lo[length & (TX_LO_ENTRIES - 1)]


def tx_split(byte_time_q16: int) -> TxSplit:
    """The tables for one link rate. Each share is floored on its own, so the sum is
    ``(len * bt) >> 16`` or one less: |error| <= 1 ns per frame, never more time."""
    if byte_time_q16 <= 0:
        raise ConfigError(f"byte_time_q16 = {byte_time_q16!r} is out of range: must be > 0")
    hi = tuple(((h << TX_LO_BITS) * byte_time_q16) >> BYTE_TIME_FRAC for h in range(TX_HI_ENTRIES))
    lo = tuple((lo * byte_time_q16) >> BYTE_TIME_FRAC for lo in range(TX_LO_ENTRIES))
    if hi[-1] + lo[-1] >= 1 << 32:
        raise ConfigError(f"byte_time_q16 = {byte_time_q16}: a {MAX_FRAME} B frame takes 2^32 ns or more")
    return TxSplit(hi, lo)


def s32(x: int) -> int:
    """x as the TNA program's int<32> (two's complement of its low 32 bits)."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def serial_gt(a: int, b: int) -> bool:
    """a > b for 32-bit times that wrap (the TNA program's time_t): the sign of a - b."""
    return s32(a - b) > 0


# --------------------------------------------------------------------------- products by a per-link constant

MANT_BITS = 7  # x keeps its 7 leading bits: x' = m << e with 64 <= m < 128 (or x' = x when x < 128)
MANT_ENTRIES = 1 << MANT_BITS


def mantissa(x: int) -> tuple[int, int]:
    """(e, m) with m = x >> e holding x's MANT_BITS leading bits. The data plane finds e with a ternary
    table on x's leading one (p4src/include/mantissa.p4) and shifts by it."""
    if x < 0:
        raise ValueError(f"mantissa of a negative value {x}")
    e = max(0, x.bit_length() - MANT_BITS)
    return e, x >> e


def mul_rows(k: int) -> tuple[int, ...]:
    """The controller's table for one constant k: m * k for every mantissa m."""
    return tuple(m * k for m in range(MANT_ENTRIES))


def mul(x: int, k: int) -> int:
    """x * k as the data plane computes it: (m * k) << e, the product of x's leading bits. Never above the
    product; below it by less than 2^-(MANT_BITS-1) = 1/64 of it (x - (m << e) < 2^e <= x / 64), and
    exact for x < MANT_ENTRIES."""
    e, m = mantissa(x)
    return (m * k) << e


# --------------------------------------------------------------------------- products of two run-time values

# A product or quotient of two run-time values (RED's count * p_b and its drop test) is a sum of their
# logarithms: Log2 keeps x's LOG_MANT_BITS leading bits and looks their log up, Exp2 looks up the fraction's
# EXP_KEY_BITS leading bits and shifts by the integer part (p4src/include/logexp.p4). Both tables are
# constants of the program, the same for every link.
LOG_FRAC = 12  # log2 values in Q12 (signed)
LOG_MANT_BITS = 10
LOG_ENTRIES = 1 << LOG_MANT_BITS
EXP_KEY_BITS = 10
EXP_ENTRIES = 1 << EXP_KEY_BITS
EXP_FRAC = 20  # Exp2's rows: 2^(k / EXP_ENTRIES) in Q20
LOG_ZERO = -(1 << 24)  # Log2(0): below every sum the programs form, so Exp2 of anything with it is 0
LOG_ONE_BITS = 32 << LOG_FRAC  # log2(2^32): the log of probability 1 in Q32


def _log_row(m: int) -> int:
    if m == 0:
        return 0
    # x >= LOG_ENTRIES keeps only its leading bits: the row is the log of the middle of what they stand for
    mid = m + 0.5 if m >= LOG_ENTRIES // 2 else m
    return round(math.log2(mid) * (1 << LOG_FRAC))


LOG_ROWS = tuple(_log_row(m) for m in range(LOG_ENTRIES))
EXP_ROWS = tuple(math.floor(2 ** (k / EXP_ENTRIES) * (1 << EXP_FRAC)) for k in range(EXP_ENTRIES))


def log_q(x: float) -> int:
    """log2(x) of a constant, exactly and rounded, in Q12: what the controller writes for a link's factor (RED's
    w_q, slope and mean packet size), which the data plane adds to a looked-up ``log2_q``."""
    return round(math.log2(x) * (1 << LOG_FRAC))


def log2_q(x: int) -> int:
    """log2(x) in Q12 as the data plane finds it: x's leading one (the same ternary table as ``mantissa``) gives
    e, LOG_ROWS[x >> e] the log of the rest. Exact to 2^-13 for x < 512; above, within 0.0016 (the 10 kept bits
    stand for their middle: |x - estimate| <= x / 1024). Log2(0) is LOG_ZERO."""
    if x < 0:
        raise ValueError(f"log2 of a negative value {x}")
    if x == 0:
        return LOG_ZERO
    e = max(0, x.bit_length() - LOG_MANT_BITS)
    return (e << LOG_FRAC) + LOG_ROWS[x >> e]


def exp2_q(l: int) -> int:
    """floor(2^(l / 2^12)), saturated to 32 bits, as the data plane finds it: EXP_ROWS on the fraction's 10
    leading bits, shifted by the integer part. Never above 2^(l/4096); below it by at most 3/4096 in log2 (the
    fraction's two dropped bits, 0.05 %) plus the floor."""
    if l >= 32 << LOG_FRAC:
        return 0xFFFFFFFF
    shift = (l >> LOG_FRAC) - EXP_FRAC
    row = EXP_ROWS[(l & ((1 << LOG_FRAC) - 1)) >> (LOG_FRAC - EXP_KEY_BITS)]
    return row << shift if shift >= 0 else row >> min(-shift, 63)
