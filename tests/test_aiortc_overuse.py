"""experiments.aiortc_overuse (issue 35): the onsets it counts and its open-loop replay of aiortc's estimator
(the replay of a real trace against the logged states is checked in test_webrtc's loopback test)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from experiments.aiortc_overuse import NTP_EPOCH_OFFSET_MS, onsets, replay

needs_aiortc = pytest.mark.skipif(importlib.util.find_spec("aiortc") is None, reason="aiortc is not installed")


def test_an_onset_is_where_usage_turns_overusing():
    u = ["normal", "overusing", "overusing", "underusing", "overusing", "normal"]
    assert list(onsets(u)) == [1, 4]
    assert list(onsets(["overusing", "normal"])) == [0] and list(onsets([])) == []


def _trace(queue_ms):
    """One 300-byte packet a frame at 30 frames/s for 20 s, each delayed by 50 ms + queue_ms(t)."""
    t = np.arange(600) / 30
    send_ms = 1_790_000_000_000 + NTP_EPOCH_OFFSET_MS + t * 1000
    arrival = send_ms + 50 + queue_ms(t)
    abs_send = (np.round(t * (1 << 18)).astype(np.int64)) & 0xFFFFFF
    return pd.DataFrame({"abs_send_time": abs_send, "size": 300}), arrival


@needs_aiortc
def test_the_replay_sees_a_growing_queue_and_not_a_flat_path_at_either_clock_resolution():
    flat, arrival = _trace(lambda t: 0 * t)
    for a in (arrival, np.floor(arrival)):  # exact and aiortc's integer ms
        assert len(onsets(replay(flat, a))) == 0
    ramp, arrival = _trace(lambda t: np.interp(t, [0, 10, 11, 12, 20], [0, 0, 100, 0, 0]))  # 100 ms up in 1 s
    assert len(onsets(replay(ramp, arrival))) >= 1
