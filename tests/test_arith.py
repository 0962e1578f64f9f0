"""The Tofino arithmetic (refmodel/arith.py) against the v1model arithmetic it replaces."""

import random

import pytest

from refmodel import arith
from refmodel.params import ConfigError, byte_time_q16, drain_ns


@pytest.mark.parametrize("rate_bps", [64_000, 1_000_000, 2_500_000, 10_000_000, 100_000_000, 1_000_000_000])
def test_tx_split_within_one_ns_below_the_product(rate_bps):
    bt = byte_time_q16(rate_bps)
    split = arith.tx_split(bt)
    rng = random.Random(rate_bps)
    lengths = list(range(0, 2000)) + [rng.randrange(arith.MAX_FRAME + 1) for _ in range(2000)] + [arith.MAX_FRAME]
    errors = {drain_ns(n, bt) - split.tx_ns(n) for n in lengths}
    assert errors <= {0, 1}
    assert 0 in errors


def test_tx_split_sizes_match_the_p4_tables():
    split = arith.tx_split(byte_time_q16(2_000_000))
    assert len(split.lo) == 64
    assert len(split.hi) == arith.TX_HI_ENTRIES
    assert arith.TX_HI_ENTRIES <= 2 ** 10  # the key is length[15:6]


def test_tx_split_refuses_what_the_fields_cannot_hold():
    with pytest.raises(ConfigError):
        arith.tx_split(0)
    with pytest.raises(ConfigError, match="2\\^32"):
        arith.tx_split(byte_time_q16(5000))  # 5 kbit/s: a 16 kB frame takes 26 s
    with pytest.raises(ValueError):
        arith.tx_split(byte_time_q16(1e6)).tx_ns(arith.MAX_FRAME + 1)


@pytest.mark.parametrize("a,b,gt", [(5, 3, True), (3, 5, False), (3, 3, False), (1, 0xFFFFFFFF, True),
                                    (0xFFFFFFFF, 1, False), (0x7FFFFFFF, 0, True), (0x80000000, 0, False)])
def test_serial_comparison(a, b, gt):
    assert arith.serial_gt(a, b) is gt


def test_the_lab_profiles_rates_give_the_exact_product_for_every_frame():
    """Every fixed-rate profile has a whole number of ns per byte, so the split tables give exactly
    len * byte_time: the rewrite changes no number of those scenarios (web6 included)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mininet"))
    from accessnet.profiles import PROFILES
    for name, prof in PROFILES.items():
        if prof.rate_min_bps:  # the radio draws its rates: those round (<= 1 ns per frame)
            continue
        bt = byte_time_q16(prof.rate_bps)
        split = arith.tx_split(bt)
        assert all(split.tx_ns(n) == drain_ns(n, bt) for n in range(arith.MAX_FRAME + 1)), name


def test_mantissa_keeps_the_leading_bits():
    assert arith.mantissa(0) == (0, 0)
    assert arith.mantissa(127) == (0, 127)
    assert arith.mantissa(128) == (1, 64)
    assert arith.mantissa(255) == (1, 127)
    assert arith.mantissa(2**32 - 1) == (25, 127)
    with pytest.raises(ValueError):
        arith.mantissa(-1)


def test_mul_is_never_above_and_less_than_a_64th_below_the_product():
    rng = random.Random(5)
    for k in (1, 35_184, 1_035_444, 271_839_737, 2**32 - 1):
        rows = arith.mul_rows(k)
        assert len(rows) == arith.MANT_ENTRIES and rows[5] == 5 * k
        for x in list(range(300)) + [rng.randrange(2**32) for _ in range(2000)]:
            got, exact = arith.mul(x, k), x * k
            assert got <= exact and exact - got < exact / 64 + 1
            if x < arith.MANT_ENTRIES:
                assert got == exact


def test_log2_is_within_its_bound_and_exact_below_512():
    import math
    rng = random.Random(7)
    xs = list(range(1, 2048)) + [rng.randrange(1, 1 << 32) for _ in range(20000)] + [(1 << 32) - 1, 1 << 31]
    for x in xs:
        err = arith.log2_q(x) / 4096 - math.log2(x)
        assert abs(err) <= (2 ** -13 if x < 512 else 0.0016), x
    assert arith.log2_q(0) == arith.LOG_ZERO


def test_exp2_is_never_above_and_at_most_a_twentieth_of_a_percent_below():
    rng = random.Random(8)
    for l in [rng.randrange(-20 * 4096, 32 * 4096) for _ in range(20000)] + [0, 4095, 31 * 4096]:
        exact = 2 ** (l / 4096)
        y = arith.exp2_q(l)
        assert y <= exact and y >= int(exact * (1 - 5.1e-4)) - 1, l
    assert arith.exp2_q(32 * 4096) == 0xFFFFFFFF and arith.exp2_q(arith.LOG_ZERO + 40 * 4096) == 0


def test_a_product_through_logs_is_within_a_quarter_percent():
    rng = random.Random(9)
    for _ in range(20000):
        a, b = rng.randrange(1, 1 << 16), rng.randrange(1, 1 << 15)
        assert arith.exp2_q(arith.log2_q(a) + arith.log2_q(b)) == pytest.approx(a * b, rel=2.5e-3, abs=1)
