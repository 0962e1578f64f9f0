package main

// Pion's send-side GCC behind a standing queue (issue 35), through its public API in real time: a 2.5 Mbit/s
// drop-tail bottleneck (50 packets, 25 ms one way) simulated at the sender's writer, TWCC feedback from
// pion/interceptor's own twcc.Recorder every 50 ms, and the sender following GCC's target as the encoder
// does. Built against the pinned pion/interceptor as is (`go test .`) it fails: the queue's packets arrive
// 3.84 ms apart, the arrival group accumulator never closes a group, and the target stays at its 4 Mbit/s
// start with 40 % loss. With the patch (patches/interceptor-v0.1.51, `go test -modfile $(./patched.sh go
// DIR) .`, as build/pion-rtc is built) the target falls below the link rate within 2 s.

import (
	"sync"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
)

// bottleneck: a drop-tail FIFO at rateBps with room for capPackets, then a fixed one-way delay.
type bottleneck struct {
	mu         sync.Mutex
	rateBps    float64
	capPackets int
	delay      time.Duration
	free       time.Time   // when the link finishes the packets queued so far
	queued     []time.Time // the queued packets' departures from the queue (free times)
	arrivals   []arrival   // delivered, not yet reported
	sent, lost int
}

type arrival struct {
	seq uint16
	at  time.Time
}

func (b *bottleneck) send(seq uint16, size int, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent++
	for len(b.queued) > 0 && !b.queued[0].After(now) {
		b.queued = b.queued[1:]
	}
	if len(b.queued) >= b.capPackets {
		b.lost++
		return
	}
	start := now
	if b.free.After(now) {
		start = b.free
	}
	b.free = start.Add(time.Duration(float64(size*8) / b.rateBps * 1e9))
	b.queued = append(b.queued, b.free)
	b.arrivals = append(b.arrivals, arrival{seq, b.free.Add(b.delay)})
}

// due: the arrivals up to now, in order.
func (b *bottleneck) due(now time.Time) []arrival {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for n < len(b.arrivals) && !b.arrivals[n].at.After(now) {
		n++
	}
	out := b.arrivals[:n:n]
	b.arrivals = b.arrivals[n:]
	return out
}

func TestGCCFallsBelowTheLinkBehindAStandingQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("3 s in real time")
	}
	const linkBps, startBps, packet = 2_500_000, 4_000_000, 1200
	bwe, err := gcc.NewSendSideBWE(gcc.SendSideBWEInitialBitrate(startBps), gcc.SendSideBWEMinBitrate(50_000),
		gcc.SendSideBWEMaxBitrate(10_000_000), gcc.SendSideBWEPacer(gcc.NewNoOpPacer()))
	if err != nil {
		t.Fatal(err)
	}
	defer bwe.Close()
	link := &bottleneck{rateBps: linkBps, capPackets: 50, delay: 25 * time.Millisecond}
	info := &interceptor.StreamInfo{SSRC: 1,
		RTPHeaderExtensions: []interceptor.RTPHeaderExtension{{URI: sdp.TransportCCURI, ID: 1}}}
	w := bwe.AddStream(info, interceptor.RTPWriterFunc(
		func(h *rtp.Header, payload []byte, _ interceptor.Attributes) (int, error) {
			var ext rtp.TransportCCExtension
			if err := ext.Unmarshal(h.GetExtension(1)); err != nil {
				t.Error(err)
			}
			link.send(ext.TransportSequence, h.MarshalSize()+len(payload), time.Now())
			return h.MarshalSize() + len(payload), nil
		}))

	rec := twcc.NewRecorder(2)
	begin := time.Now()
	epoch := begin.Add(-time.Hour) // the receiver's clock (µs), any origin
	var seq uint16
	var carry float64
	var fellAt time.Duration
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for k := 0; time.Since(begin) < 3*time.Second; k++ {
		now := <-tick.C
		carry += float64(bwe.GetTargetBitrate()) * 0.005 / 8 / packet // the encoder follows the target
		for ; carry >= 1; carry-- {
			h := &rtp.Header{Version: 2, PayloadType: 96, SSRC: 1, SequenceNumber: seq}
			b, _ := rtp.TransportCCExtension{TransportSequence: seq}.Marshal()
			if err := h.SetExtension(1, b); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(h, make([]byte, packet-h.MarshalSize()), interceptor.Attributes{}); err != nil {
				t.Fatal(err)
			}
			seq++
		}
		if k%10 == 9 { // feedback every 50 ms
			for _, a := range link.due(now) {
				rec.Record(1, a.seq, a.at.Sub(epoch).Microseconds())
			}
			if pkts := rec.BuildFeedbackPacket(); len(pkts) > 0 {
				if err := bwe.WriteRTCP(pkts, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		if fellAt == 0 && bwe.GetTargetBitrate() < linkBps {
			fellAt = time.Since(begin)
		}
	}
	st := bwe.GetStats()
	t.Logf("target %d bit/s after 3 s (fell below the link at %v); %d of %d packets lost; delay %v ms vs threshold %v ms, %v, %v",
		bwe.GetTargetBitrate(), fellAt, link.lost, link.sent, st["delayEstimate"], st["delayThreshold"], st["usage"], st["state"])
	if fellAt == 0 || fellAt > 2*time.Second {
		t.Fatalf("GCC's target did not fall below the %d bit/s link within 2 s (fell at %v, target now %d, %d of %d lost)",
			linkBps, fellAt, bwe.GetTargetBitrate(), link.lost, link.sent)
	}
}
