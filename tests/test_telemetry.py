import dataclasses

from frames import audio, client_ack, client_syn, syn_ack, tcp

import pytest

from refmodel import Pipeline, Route, TrafficClass
from refmodel.constants import Telemetry
from refmodel.params import ConfigError, parse_telemetry, pipeline_params
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


ROUTES = {1: Route(2, True), 2: Route(1, False)}


def _mix():
    """(port, frame): a handshake the flow tracker follows, data, the audio, the client's ACK of the data."""
    opts = [("MSS", 1460), ("WScale", 9)]
    return [(2, client_syn(5000)), (1, syn_ack(1000, ack=5001, options=opts)), (2, client_ack(1001)),
            (1, tcp(1001)), (1, audio(0)), (1, tcp(1001 + 1448)), (1, audio(1)),
            (2, client_ack(1001 + 2 * 1448)), (1, tcp(500, dport=50000, payload=100)), (1, audio(2))]


def _run(telemetry, aqm="iwa"):
    p = Pipeline(ROUTES, pipeline_params(2e6, aqm, limit_pkts=48, telemetry=telemetry))
    return [p.process(1_000_000 * i, f, port) for i, (port, f) in enumerate(_mix())]


@pytest.mark.parametrize("aqm", ["fifo", "iwa"])
def test_datagrams_mode_reports_the_datagrams_only_and_decides_the_same(aqm):
    """[link] telemetry = "datagrams": a record for each UDP datagram that meets the bottleneck, numbered 0, 1, ...
    with nothing in between (the single-bottleneck check matches by that number), the same record as with every
    packet reported but its number; every decision and every frame out (IWA's window rewrite included) the same."""
    every, datagrams = _run("all", aqm), _run("datagrams", aqm)
    assert [r.record is not None for r in every].count(True) > 4  # TCP, and with IWA the ACKs, are reported
    kept = [(a.record, b.record) for a, b in zip(every, datagrams) if b.record is not None]
    assert [b.cls for _, b in kept] == [TrafficClass.UDP] * 3
    assert [b.seq for _, b in kept] == [0, 1, 2]
    assert all(dataclasses.replace(a, seq=b.seq) == b for a, b in kept)
    assert [(r.egress, r.frame, r.decision, r.reason) for r in every] == \
        [(r.egress, r.frame, r.decision, r.reason) for r in datagrams]
    if aqm == "iwa":
        assert any(r.frame != f for r, (_, f) in zip(datagrams, _mix()))  # a window was rewritten, unreported


def test_off_reports_nothing():
    assert all(r.record is None for r in _run("off"))
    assert all(r.record is None for r in _run(False))


def test_telemetry_modes_by_name_bool_or_member():
    assert [parse_telemetry(x) for x in ("all", "DATAGRAMS", "off", True, False, Telemetry.DATAGRAMS)] == \
        [Telemetry.ALL, Telemetry.DATAGRAMS, Telemetry.OFF, Telemetry.ALL, Telemetry.OFF, Telemetry.DATAGRAMS]
    with pytest.raises(ConfigError, match="telemetry = 'audio' is unknown: allowed 'off', 'all', 'datagrams'"):
        parse_telemetry("audio")
