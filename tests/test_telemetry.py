from frames import tcp

import pytest

from refmodel import Pipeline, Route
from refmodel.params import pipeline_params
from refmodel.telemetry import SIZE, Record, TelemetryError, decode_frame, encode_frame


def test_record_roundtrip_through_a_frame():
    p = Pipeline({1: Route(2, True)}, pipeline_params(2e6, "red", red=dict(w_q=0.002, max_p=0.1, th_min=5,
                                                                               th_max=20)))
    rec = p.process(123_000, tcp(), 1).record
    frame = encode_frame(rec)
    assert len(frame) == 14 + SIZE == 78
    assert decode_frame(frame) == rec


def test_truncated_and_foreign_frames_raise():
    with pytest.raises(TelemetryError, match="64 bytes"):
        Record.decode(b"\x01" * 10)
    with pytest.raises(TelemetryError, match="not a telemetry frame"):
        decode_frame(tcp())
