package main

// The synthetic encoder, mirrored line by line from mininet/accessnet/webrtc.py (frame_sizes, split_frame,
// clamp_rate, the trailer, SyntheticEncoder.payloads and aiortc's VP8 payload descriptor with a 15-bit
// picture id). The same float64 operations in the same order give the same sizes: encoder_test.go holds a
// table printed by the Python functions and tests/test_webrtc.py compares `pion-rtc sizes` with them live.

import (
	"encoding/binary"
	"math"
)

const (
	magic         = 0x57525443 // "WRTC"
	trailerSize   = 20         // packet seq (4), frame (4), send_ns (8), magic (4), big-endian
	sendNsOffset  = 8          // within the trailer
	maxPayload    = 1200       // RTP payload bytes per packet (VP8 descriptor + filler + trailer)
	vp8Descriptor = 4          // aiortc's descriptor with a 15-bit picture id
	minPacket     = vp8Descriptor + trailerSize
	videoClock    = 90_000
)

// frameSizes is webrtc.frame_sizes: payload bytes of the next frame at targetBps and the fraction of a byte
// carried to the next one.
func frameSizes(targetBps, fps, carry float64) (int, float64) {
	exact := targetBps/8/fps + carry
	n := int(exact) // Python's int() truncates toward zero; exact >= 0
	return n, exact - float64(n)
}

// splitFrame is webrtc.split_frame: packet payload sizes as even as possible, each at most maxPayload and at
// least minPacket.
func splitFrame(nbytes, maxPay int) []int {
	if nbytes < minPacket {
		nbytes = minPacket
	}
	k := int(math.Ceil(float64(nbytes) / float64(maxPay)))
	base, extra := nbytes/k, nbytes%k
	out := make([]int, k)
	for i := range out {
		out[i] = base
		if i < extra {
			out[i]++
		}
	}
	return out
}

// clampRate is webrtc.clamp_rate.
func clampRate(bps, lo, hi float64) int {
	return int(math.Min(hi, math.Max(lo, bps)))
}

// vp8Desc is aiortc's VpxPayloadDescriptor(partition_start, partition_id=0, picture_id) with a 15-bit id:
// X=1 (and S=1 on a frame's first packet), I=1, M=1 and the picture id.
func vp8Desc(start bool, pictureID int) []byte {
	b0 := byte(0x80)
	if start {
		b0 |= 0x10
	}
	return []byte{b0, 0x80, 0x80 | byte(pictureID>>8), byte(pictureID)}
}

func packTrailer(b []byte, seq, frame uint32, sendNs uint64) {
	binary.BigEndian.PutUint32(b[0:], seq)
	binary.BigEndian.PutUint32(b[4:], frame)
	binary.BigEndian.PutUint64(b[8:], sendNs)
	binary.BigEndian.PutUint32(b[16:], magic)
}

// readTrailer is webrtc.read_trailer.
func readTrailer(data []byte) (seq, frame uint32, sendNs uint64, ok bool) {
	if len(data) < trailerSize {
		return 0, 0, 0, false
	}
	t := data[len(data)-trailerSize:]
	if binary.BigEndian.Uint32(t[16:]) != magic {
		return 0, 0, 0, false
	}
	return binary.BigEndian.Uint32(t[0:]), binary.BigEndian.Uint32(t[4:]), binary.BigEndian.Uint64(t[8:]), true
}

// stamp writes sendNs into the trailer at the end of data, in place.
func stamp(data []byte, sendNs uint64) {
	binary.BigEndian.PutUint64(data[len(data)-trailerSize+sendNsOffset:], sendNs)
}

// encoder is SyntheticEncoder without aiortc: the target is set from GCC's estimate instead of REMB.
type encoder struct {
	minBps, maxBps, fps float64
	target              int
	carry               float64
	frame, seq          uint32
	pictureID           int
}

func newEncoder(startBps, minBps, maxBps, fps float64) *encoder {
	return &encoder{minBps: minBps, maxBps: maxBps, fps: fps, target: clampRate(startBps, minBps, maxBps)}
}

func (e *encoder) setTarget(bps int) { e.target = clampRate(float64(bps), e.minBps, e.maxBps) }

// payloads is SyntheticEncoder.payloads: one frame's packet payloads (send time 0 in the trailer), the frame
// number they carry.
func (e *encoder) payloads() ([][]byte, uint32) {
	var n int
	n, e.carry = frameSizes(float64(e.target), e.fps, e.carry)
	sizes := splitFrame(n, maxPayload)
	out := make([][]byte, len(sizes))
	for i, size := range sizes {
		p := make([]byte, size)
		copy(p, vp8Desc(i == 0, e.pictureID))
		packTrailer(p[size-trailerSize:], e.seq, e.frame, 0)
		out[i] = p
		e.seq++
	}
	frame := e.frame
	e.frame++
	e.pictureID = (e.pictureID + 1) % (1 << 15)
	return out, frame
}

// rtpTimestamp is the frame's pts as aiortc computes it: int(k * VIDEO_CLOCK / fps).
func rtpTimestamp(k int64, fps float64) uint32 {
	return uint32(int64(float64(k*videoClock) / fps))
}
