"""Configuration from human units: values, and errors that name the field and range."""

import pytest

from refmodel.params import ConfigError, iwa_params, pie_params, pipeline_params, queue_params


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


def test_iwa_age_must_cover_the_window():
    with pytest.raises(ConfigError, match="age_s"):
        iwa_params(window_s=5, age_s=1)


def test_pie_value_too_large_for_its_field():
    with pytest.raises(ConfigError, match=r"target_ns .* allowed 1\.\.4294967295"):
        pie_params(target_s=10.0)
