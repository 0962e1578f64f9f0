package main

import (
	"bytes"
	"reflect"
	"testing"
)

// pythonFrames: packet payload sizes of the first frames from the Python encoder, printed once by
// mininet/accessnet/webrtc.py's own frame_sizes and split_frame (carry starting at 0):
//
//	for bps, fps, frames in cases: carry = 0.0; for _ in range(frames): n, carry = frame_sizes(bps, fps, carry);
//	    print(split_frame(n))
//
// It is independent of this package's code: the numbers come from the Python functions, not from encoder.go.
// tests/test_webrtc.py compares `pion-rtc sizes` with the Python functions live, over more frames.
var pythonFrames = []struct {
	bps    float64
	fps    float64
	frames [][]int
}{
	{128000, 30, [][]int{{533}, {533}, {534}, {533}, {533}}},
	{1000000, 30, [][]int{{1042, 1042, 1041, 1041}, {1042, 1042, 1042, 1041}, {1042, 1042, 1042, 1041}, {1042, 1042, 1041, 1041}}},
	{2345678, 25, [][]int{{1173, 1173, 1173, 1173, 1173, 1173, 1173, 1173, 1172, 1172}, {1173, 1173, 1173, 1173, 1173, 1173, 1173, 1173, 1172, 1172}, {1173, 1173, 1173, 1173, 1173, 1173, 1173, 1173, 1173, 1172}, {1173, 1173, 1173, 1173, 1173, 1173, 1173, 1173, 1172, 1172}}},
	{50000, 7, [][]int{{892}, {893}, {893}}},
	{3000000, 30, [][]int{{1137, 1137, 1137, 1137, 1136, 1136, 1136, 1136, 1136, 1136, 1136}, {1137, 1137, 1137, 1137, 1136, 1136, 1136, 1136, 1136, 1136, 1136}, {1137, 1137, 1137, 1137, 1136, 1136, 1136, 1136, 1136, 1136, 1136}}},
	{10000000, 29.97, [][]int{{1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191}, {1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191}, {1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1192, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191, 1191}}},
	{1234, 1, [][]int{{154}, {154}}},
}

func TestEncoderSizesMatchThePythonEncoder(t *testing.T) {
	for _, c := range pythonFrames {
		e := newEncoder(c.bps, 1, 1e12, c.fps)
		for i, want := range c.frames {
			ps, frame := e.payloads()
			got := make([]int, len(ps))
			for j, p := range ps {
				got[j] = len(p)
			}
			if !reflect.DeepEqual(got, want) || frame != uint32(i) {
				t.Errorf("%g bit/s, %g fps, frame %d: sizes %v (frame %d), the Python encoder's %v", c.bps, c.fps, i, got, frame, want)
			}
		}
	}
}

func TestFramesAddUpToTheTargetRate(t *testing.T) { // as test_frames_add_up_to_the_target_rate
	for _, c := range []struct{ bps, fps float64 }{{128_000, 30}, {1_000_000, 30}, {2_345_678, 25}, {50_000, 7}} {
		carry, total := 0.0, 0
		for i := 0; i < int(c.fps)*10; i++ {
			var n int
			n, carry = frameSizes(c.bps, c.fps, carry)
			total += n
		}
		if d := float64(total) - c.bps/8*10; d > 1 || d < -1 {
			t.Errorf("%g bit/s at %g fps: %d bytes in 10 s", c.bps, c.fps, total)
		}
	}
}

func TestSplitFrame(t *testing.T) { // as test_a_frame_splits_into_even_packets_within_the_payload_limit
	for _, n := range []int{1, minPacket, 533, 1200, 1201, 10_417, 41_667} {
		sizes := splitFrame(n, maxPayload)
		sum, lo, hi := 0, sizes[0], sizes[0]
		for _, s := range sizes {
			sum += s
			lo, hi = min(lo, s), max(hi, s)
		}
		if sum != max(n, minPacket) || hi > maxPayload || lo < minPacket || hi-lo > 1 {
			t.Errorf("split_frame(%d) = %v", n, sizes)
		}
	}
}

func TestClampAndTarget(t *testing.T) {
	e := newEncoder(128_000, 50_000, 10_000_000, 30)
	if e.target != 128_000 {
		t.Fatal(e.target)
	}
	e.setTarget(20_000_000)
	if e.target != 10_000_000 {
		t.Fatal(e.target)
	}
	e.setTarget(1)
	if e.target != 50_000 {
		t.Fatal(e.target)
	}
}

func TestTrailerAndDescriptor(t *testing.T) {
	// the Python test's packet: aiortc's descriptor for picture id 0x123 on a frame's first packet
	if d := vp8Desc(true, 0x123); !bytes.Equal(d, []byte{0x90, 0x80, 0x81, 0x23}) {
		t.Errorf("descriptor %x", d)
	}
	if d := vp8Desc(false, 0x7fff); !bytes.Equal(d, []byte{0x80, 0x80, 0xff, 0xff}) {
		t.Errorf("descriptor %x", d)
	}
	p := make([]byte, 74)
	copy(p, vp8Desc(true, 0x123))
	packTrailer(p[len(p)-trailerSize:], 7, 3, 0)
	if s, f, ns, ok := readTrailer(p); !ok || s != 7 || f != 3 || ns != 0 {
		t.Fatal(s, f, ns, ok)
	}
	stamp(p, 1_795_000_000_123_456_789)
	if s, f, ns, ok := readTrailer(p); !ok || s != 7 || f != 3 || ns != 1_795_000_000_123_456_789 {
		t.Fatal(s, f, ns, ok)
	}
	if _, _, _, ok := readTrailer(make([]byte, 40)); ok {
		t.Error("no magic, yet a trailer")
	}
	if _, _, _, ok := readTrailer([]byte("short")); ok {
		t.Error("short, yet a trailer")
	}
	e := newEncoder(3_000_000, 1, 1e12, 30)
	ps, _ := e.payloads()
	for i, p := range ps {
		if s, f, _, ok := readTrailer(p); !ok || s != uint32(i) || f != 0 || (p[0]&0x10 != 0) != (i == 0) {
			t.Errorf("packet %d: seq %d frame %d start bit %x", i, s, f, p[0])
		}
	}
}

func TestRTPTimestampIsAiortcsPts(t *testing.T) {
	for _, c := range []struct {
		k    int64
		fps  float64
		want uint32
	}{{0, 30, 0}, {1, 30, 3000}, {7, 29.97, 21021}, {100_000, 30, 300_000_000}, {3, 7, 38571}} {
		if got := rtpTimestamp(c.k, c.fps); got != c.want {
			t.Errorf("k %d at %g fps: %d, want %d", c.k, c.fps, got, c.want)
		}
	}
}
