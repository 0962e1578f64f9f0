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


def serial_gt(a: int, b: int) -> bool:
    """a > b for 32-bit times that wrap (the TNA program's time_t): the sign of a - b."""
    d = (a - b) & 0xFFFFFFFF
    return 0 < d < 1 << 31


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
