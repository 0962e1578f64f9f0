"""Configuration from human units: values, and errors that name the field and range."""

import pytest

from refmodel.params import (
    ConfigError, bytes_to_ns, iwa_params, ns_to_bytes, pie_params, pipeline_params, queue_params,
)


def test_byte_time_and_limits():
    q = queue_params(2e6, limit_pkts=48, bucket_bytes=1514)
    assert q.byte_time_q16 == 4000 << 16
    assert q.bucket_ns == 1514 * 4000 and q.mtu_ns == 1514 * 4000
    assert q.limit_pkts == 48 and q.limit_ns == 0


@pytest.mark.parametrize("kwargs,field", [
    (dict(rate_bps=-1), "rate_bps"),
    (dict(rate_bps=2e6, aqm="wred"), "aqm"),
    (dict(rate_bps=2e6, limit_pkts=5000), "limit_pkts"),
    (dict(rate_bps=2e6, limit_pkts=10, limit_bytes=1000), "limit_pkts or limit_bytes"),
    (dict(rate_bps=1e-3), "byte_time_q16"),
])
def test_bad_queue_configs_name_the_field(kwargs, field):
    rate = kwargs.pop("rate_bps")
    with pytest.raises(ConfigError, match=field) as e:
        queue_params(rate, **kwargs)
    assert "allowed" in str(e.value) or "must" in str(e.value) or "not both" in str(e.value)


def test_unknown_aqm_lists_the_allowed_ones():
    with pytest.raises(ConfigError, match="fifo, red, codel, pie, iwa"):
        pipeline_params(2e6, "sfq")


def test_iwa_age_must_cover_the_hold():
    with pytest.raises(ConfigError, match="age_s"):
        iwa_params(2e6, hold_s=2, age_s=1)
    with pytest.raises(ConfigError, match="hold_ns"):  # a 32-bit field: at most 4.29 s
        iwa_params(2e6, hold_s=5, age_s=10)


@pytest.mark.parametrize("rate", [160e3, 2e6, 50e6])
def test_iwa_payload_time_is_the_frame_time_of_a_full_segment(rate):
    p = iwa_params(rate)
    frame_ns = 1514 * 8 * 1e9 / rate
    assert p.mss_bytes == 1460
    exact_ns = (1460 * p.payload_ns_q16) >> 16
    assert abs(exact_ns - frame_ns) <= 1  # a full segment costs its frame, headers included
    assert ((exact_ns * p.bytes_per_ns_q32) >> 32) in (1459, 1460)  # the inverse rounds down, never up
    # the data plane's conversions (product tables, refmodel/arith.py: mul): never above, < 1/64 below
    assert exact_ns * (1 - 1 / 64) < bytes_to_ns(p, 1460) <= exact_ns
    assert 1460 * (1 - 1 / 64) - 1 < ns_to_bytes(p, exact_ns) <= 1460
    assert ns_to_bytes(p, round(frame_ns) + 1000) >= 1460 * (1 - 1 / 64) - 1


def test_iwa_mtu_sets_the_mss():
    assert iwa_params(2e6, mtu_bytes=1280).mss_bytes == 1280 - 54
    with pytest.raises(ConfigError, match="mss_bytes"):
        iwa_params(2e6, mtu_bytes=54)


def test_pie_value_too_large_for_its_field():
    with pytest.raises(ConfigError, match=r"target_ns .* allowed 1\.\.4294967295"):
        pie_params(target_s=10.0)
