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
