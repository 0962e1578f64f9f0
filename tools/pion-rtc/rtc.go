package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/cc"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/interceptor/pkg/nack"
	"github.com/pion/interceptor/pkg/report"
	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"
)

const vp8PayloadType = 96

// mediaEngine: VP8 only (no RTX), with NACK, PLI and transport-cc feedback and the transport-wide sequence
// number header extension.
func mediaEngine() (*webrtc.MediaEngine, error) {
	m := &webrtc.MediaEngine{}
	fb := []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"},
		{Type: webrtc.TypeRTCPFBTransportCC}}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: videoClock,
			RTCPFeedback: fb},
		PayloadType: vp8PayloadType,
	}, webrtc.RTPCodecTypeVideo); err != nil {
		return nil, err
	}
	if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: sdp.TransportCCURI},
		webrtc.RTPCodecTypeVideo); err != nil {
		return nil, err
	}
	return m, nil
}

// settings: ICE host candidates on localIP only (its family's UDP, loopback allowed, no mDNS).
func settings(localIP string) (webrtc.SettingEngine, error) {
	var s webrtc.SettingEngine
	ip := net.ParseIP(localIP)
	if ip == nil {
		return s, fmt.Errorf("--local-ip %q is not an IP address", localIP)
	}
	s.SetIPFilter(func(a net.IP) bool { return a.Equal(ip) })
	if ip.To4() != nil {
		s.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	} else {
		s.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP6})
	}
	s.SetIncludeLoopbackCandidate(true)
	s.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	return s, nil
}

type sdpLine struct {
	Type string `json:"type"`
	SDP  string `json:"sdp"`
}

func writeSDP(w *bufio.Writer, d *webrtc.SessionDescription) error {
	b, err := json.Marshal(sdpLine{Type: d.Type.String(), SDP: d.SDP})
	if err != nil {
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return err
	}
	return w.Flush()
}

func readSDP(r *bufio.Reader) (webrtc.SessionDescription, error) {
	line, err := r.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return webrtc.SessionDescription{}, err
	}
	var s sdpLine
	if err := json.Unmarshal(line, &s); err != nil {
		return webrtc.SessionDescription{}, err
	}
	return webrtc.SessionDescription{Type: webrtc.NewSDPType(s.Type), SDP: s.SDP}, nil
}

// localDescription: set d and wait for ICE gathering to end (no trickle: the one message carries the candidates).
func localDescription(pc *webrtc.PeerConnection, d webrtc.SessionDescription) (*webrtc.SessionDescription, error) {
	done := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(d); err != nil {
		return nil, err
	}
	<-done
	return pc.LocalDescription(), nil
}

func stopContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ----------------------------------------------------------------------------- sender

// stampInterceptor is the innermost writer of the sender's chain (registered first): it sees each packet as
// the pacer lets it go, writes the send time into the trailer and logs it.
type stampInterceptor struct {
	interceptor.NoOp
	onPacket func(h *rtp.Header, payload []byte)
}

func (s *stampInterceptor) BindLocalStream(_ *interceptor.StreamInfo, w interceptor.RTPWriter) interceptor.RTPWriter {
	return interceptor.RTPWriterFunc(func(h *rtp.Header, payload []byte, a interceptor.Attributes) (int, error) {
		s.onPacket(h, payload)
		return w.Write(h, payload, a)
	})
}

type stampFactory struct{ i *stampInterceptor }

func (f stampFactory) NewInterceptor(string) (interceptor.Interceptor, error) { return f.i, nil }

// ntpMiddle: the middle 32 bits of the NTP time of t (RFC 3550's LSR/DLSR unit: 1/65536 s).
func ntpMiddle(t time.Time) uint32 {
	secs := uint64(t.Unix()) + 2_208_988_800
	frac := uint64(t.Nanosecond()) << 32 / 1_000_000_000
	return uint32((secs<<32 | frac) >> 16)
}

func send(a sendArgs) int {
	fmt.Printf("sender: pion/webrtc v4 with pion/interceptor gcc (send-side BWE, TWCC, pacer), start %g kbit/s in "+
		"[%g, %g], %g frames/s\n", a.startKbps, a.minKbps, a.maxKbps, a.fps)
	ctx, cancel := stopContext()
	defer cancel()
	startNs := a.startAt
	if startNs == 0 {
		startNs = time.Now().UnixNano() + 2_000_000_000
	}
	endNs := startNs + int64(a.duration*1e9)
	enc := newEncoder(a.startKbps*1e3, a.minKbps*1e3, a.maxKbps*1e3, a.fps)

	txlog, err := newCSV(a.log, txColumns, false)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer txlog.Close()
	var mu sync.Mutex // guards frameRate, sent
	frameRate := map[uint32]int{}
	var sentBytes, sentPackets int64
	stamper := &stampInterceptor{onPacket: func(h *rtp.Header, payload []byte) {
		seq, frame, _, ok := readTrailer(payload)
		if !ok {
			return
		}
		now := time.Now().UnixNano()
		stamp(payload, uint64(now))
		size := h.MarshalSize() + len(payload)
		mu.Lock()
		rate, ok := frameRate[frame]
		if !ok {
			rate = enc.target
		}
		sentBytes += int64(size)
		sentPackets++
		mu.Unlock()
		txlog.row(int64(seq), now, size, rate, int64(frame))
	}}

	m, err := mediaEngine()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	reg := &interceptor.Registry{}
	reg.Add(stampFactory{stamper}) // innermost: after the pacer
	ccf, err := cc.NewInterceptor(func() (cc.BandwidthEstimator, error) {
		return gcc.NewSendSideBWE(gcc.SendSideBWEInitialBitrate(int(enc.target)),
			gcc.SendSideBWEMinBitrate(int(a.minKbps*1e3)), gcc.SendSideBWEMaxBitrate(int(a.maxKbps*1e3)))
	})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	bweCh := make(chan cc.BandwidthEstimator, 1)
	ccf.OnNewPeerConnection(func(_ string, e cc.BandwidthEstimator) { bweCh <- e })
	reg.Add(ccf)
	hdr, err := twcc.NewHeaderExtensionInterceptor() // outside cc: the pacer's feedback adapter reads the number
	if err != nil {
		fmt.Println(err)
		return 1
	}
	reg.Add(hdr)
	if err := webrtc.ConfigureRTCPReports(reg); err != nil { // SR, and the RR for the receiver's side
		fmt.Println(err)
		return 1
	}
	se, err := settings(a.localIP)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	api := webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se))
	pc, err := api.NewPeerConnection(webrtc.Configuration{}) // no STUN/TURN
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer pc.Close()
	bwe := <-bweCh

	var connectedNs atomic.Int64
	connected := make(chan struct{})
	var failed atomic.Value
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		switch s {
		case webrtc.PeerConnectionStateConnected:
			if connectedNs.CompareAndSwap(0, time.Now().UnixNano()) {
				fmt.Printf("connected %+.3f s from the start time\n", float64(connectedNs.Load()-startNs)/1e9)
				close(connected)
			}
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			failed.Store(s.String())
		}
	})
	track, err := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8,
		ClockRate: videoClock}, "video", "pion-rtc")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	tr, err := pc.AddTransceiverFromTrack(track, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
	if err != nil {
		fmt.Println(err)
		return 1
	}

	// RTCP from the receiver (after the interceptors, which have fed TWCC to GCC): NACKs (not answered),
	// REMB (none expected), the RR's loss and the RTT from its LSR/DLSR.
	var nacked, rembs, twccReports atomic.Int64
	var rrMu sync.Mutex
	var rtt, frac *float64
	var lost *int64
	go func() {
		buf := make([]byte, 1500)
		for {
			n, _, err := tr.Sender().Read(buf)
			if err != nil {
				return
			}
			now := time.Now()
			pkts, err := rtcp.Unmarshal(buf[:n])
			if err != nil {
				continue
			}
			for _, p := range pkts {
				switch x := p.(type) {
				case *rtcp.TransportLayerNack:
					for _, pair := range x.Nacks {
						nacked.Add(int64(len(pair.PacketList())))
					}
				case *rtcp.ReceiverEstimatedMaximumBitrate:
					rembs.Add(1)
				case *rtcp.TransportLayerCC:
					twccReports.Add(1)
				case *rtcp.ReceiverReport:
					for _, r := range x.Reports {
						f, l := float64(r.FractionLost)/256, int64(r.TotalLost)
						rrMu.Lock()
						frac, lost = &f, &l
						if r.LastSenderReport != 0 {
							d := float64(ntpMiddle(now)-r.LastSenderReport-r.Delay) / 65536
							rtt = &d
						}
						rrMu.Unlock()
					}
				}
			}
		}
	}()

	offer, err := pc.CreateOffer(nil)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	local, err := localDescription(pc, offer)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	wait := float64(startNs-time.Now().UnixNano())/1e9 + 5
	if wait < 5 {
		wait = 5
	}
	deadline := time.Now().Add(time.Duration(wait * 1e9))
	var conn net.Conn
	for {
		conn, err = net.DialTimeout("tcp", net.JoinHostPort(a.dst, strconv.Itoa(a.signalPort)), time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, 100*time.Millisecond) {
			fmt.Println("signalling:", err)
			return 1
		}
	}
	if err := writeSDP(bufio.NewWriter(conn), local); err != nil {
		fmt.Println("signalling:", err)
		return 1
	}
	answer, err := readSDP(bufio.NewReader(conn))
	conn.Close()
	if err != nil {
		fmt.Println("signalling:", err)
		return 1
	}
	if err := pc.SetRemoteDescription(answer); err != nil {
		fmt.Println(err)
		return 1
	}

	stats, err := newCSV(a.stats, txStats, true)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer stats.Close()

	// The frame clock: frames due at startNs + k / fps (absolute deadlines), from the connection on; more than
	// 200 ms late skips frames rather than bursting (the Python FrameClock).
	var firstNs, skipped atomic.Int64
	frames := make(chan struct{})
	go func() {
		defer close(frames)
		select {
		case <-connected:
		case <-ctx.Done():
			return
		}
		var k int64
		for {
			due := startNs + int64(float64(k)*1e9/a.fps)
			if due >= endNs {
				return
			}
			now := time.Now().UnixNano()
			if due > now {
				if !sleepCtx(ctx, time.Duration(due-now)) {
					return
				}
			} else if now-due > 200_000_000 {
				k2 := int64(float64(now-startNs) * a.fps / 1e9)
				skipped.Add(k2 - k)
				k = k2
			}
			firstNs.CompareAndSwap(0, time.Now().UnixNano())
			mu.Lock()
			enc.setTarget(bwe.GetTargetBitrate())
			ps, frame := enc.payloads()
			frameRate[frame] = enc.target
			delete(frameRate, frame-1000)
			mu.Unlock()
			ts := rtpTimestamp(k, a.fps)
			for i, p := range ps {
				pkt := &rtp.Packet{Header: rtp.Header{Version: 2, Marker: i == len(ps)-1, PayloadType: vp8PayloadType,
					SequenceNumber: uint16(trailerSeq(p)), Timestamp: ts}, Payload: p}
				if err := track.WriteRTP(pkt); err != nil && !errors.Is(err, io.ErrClosedPipe) {
					fmt.Println("write:", err)
				}
			}
			k++
		}
	}()

	next := max(startNs, time.Now().UnixNano()) + 1_000_000_000
	code := 0
	for time.Now().UnixNano() < endNs+1_000_000_000 {
		if s, ok := failed.Load().(string); ok {
			fmt.Printf("connection %s\n", s)
			code = 1
			break
		}
		if !sleepCtx(ctx, time.Duration(next-time.Now().UnixNano())) {
			break
		}
		now := time.Now().UnixNano()
		next += 1_000_000_000
		mu.Lock()
		target, sb, sp := enc.target, sentBytes, sentPackets
		sentBytes, sentPackets = 0, 0
		mu.Unlock()
		st := bwe.GetStats()
		rrMu.Lock()
		r, f, l := rtt, frac, lost
		rrMu.Unlock()
		stats.row(now, target, nil, rembs.Swap(0), sb*8, sp, nacked.Load(), r, f, l,
			bwe.GetTargetBitrate(), st["delayTargetBitrate"], st["lossTargetBitrate"], st["averageLoss"],
			st["usage"], st["state"], st["delayEstimate"], st["delayThreshold"], st["delayMeasurement"],
			twccReports.Swap(0))
		if now > endNs {
			select {
			case <-frames:
				goto done
			default:
			}
		}
	}
done:
	cancel()
	<-frames
	if connectedNs.Load() == 0 {
		fmt.Println("never connected")
		return 1
	}
	if f := firstNs.Load(); f != 0 {
		fmt.Printf("first frame %+.3f s from the start time, %d frames skipped (the sender was late by more "+
			"than 200 ms)\n", float64(f-startNs)/1e9, skipped.Load())
	} else {
		fmt.Println("no frame sent")
	}
	return code
}

func trailerSeq(p []byte) uint32 {
	seq, _, _, _ := readTrailer(p)
	return seq
}

// ----------------------------------------------------------------------------- receiver

// rtcpCounter counts the receiver's RTCP: TWCC feedback reports and NACKed packets.
type rtcpCounter struct {
	interceptor.NoOp
	twcc, nacks atomic.Int64
}

func (c *rtcpCounter) BindRTCPWriter(w interceptor.RTCPWriter) interceptor.RTCPWriter {
	return interceptor.RTCPWriterFunc(func(pkts []rtcp.Packet, a interceptor.Attributes) (int, error) {
		for _, p := range pkts {
			switch x := p.(type) {
			case *rtcp.TransportLayerCC:
				c.twcc.Add(1)
			case *rtcp.TransportLayerNack:
				for _, pair := range x.Nacks {
					c.nacks.Add(int64(len(pair.PacketList())))
				}
			}
		}
		return w.Write(pkts, a)
	})
}

type counterFactory struct{ c *rtcpCounter }

func (f counterFactory) NewInterceptor(string) (interceptor.Interceptor, error) { return f.c, nil }

func recv(a recvArgs) int {
	fmt.Println("receiver: pion/webrtc v4: TWCC feedback, RTCP reports, NACK (the estimate is at the sender)")
	ctx, cancel := stopContext()
	defer cancel()
	end := time.Now().Add(time.Duration(a.duration * 1e9))
	ctx, cancelEnd := context.WithDeadline(ctx, end)
	defer cancelEnd()

	m, err := mediaEngine()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	reg := &interceptor.Registry{}
	counter := &rtcpCounter{}
	reg.Add(counterFactory{counter})
	gen, err := nack.NewGeneratorInterceptor()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	reg.Add(gen)
	rr, err := report.NewReceiverInterceptor()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	reg.Add(rr)
	fb, err := twcc.NewSenderInterceptor()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	reg.Add(fb)
	se, err := settings(a.localIP)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	api := webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se))
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer pc.Close()

	rxlog, err := newCSV(a.log, rxColumns, false)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer rxlog.Close()
	var mu sync.Mutex
	received, payloadBytes := int64(0), int64(0)
	maxSeq, maxSeqBefore := int64(-1), int64(-1)
	pc.OnTrack(func(t *webrtc.TrackRemote, rcv *webrtc.RTPReceiver) {
		go func() { // the sender's RTCP reaches the interceptors only when read: the SR for the RR's LSR/DLSR
			b := make([]byte, 1500)
			for {
				if _, _, err := rcv.Read(b); err != nil {
					return
				}
			}
		}()
		buf := make([]byte, 1600)
		var pkt rtp.Packet
		for {
			n, _, err := t.Read(buf)
			if err != nil {
				return
			}
			now := time.Now().UnixNano()
			if pkt.Unmarshal(buf[:n]) != nil {
				continue
			}
			seq, frame, sendNs, ok := readTrailer(pkt.Payload)
			if !ok {
				continue
			}
			rxlog.row(int64(seq), int64(sendNs), now, n, int64(frame))
			mu.Lock()
			received++
			payloadBytes += int64(len(pkt.Payload))
			maxSeq = max(maxSeq, int64(seq))
			mu.Unlock()
		}
	})

	lc := net.ListenConfig{}
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(a.localIP, strconv.Itoa(a.signalPort)))
	if err != nil {
		fmt.Println("signalling:", err)
		return 1
	}
	go func() { <-ctx.Done(); ln.Close() }()
	conn, err := ln.Accept()
	ln.Close()
	if err != nil {
		if ctx.Err() != nil {
			return 0 // stopped (or its time ended) before a sender came
		}
		fmt.Println("signalling:", err)
		return 1
	}
	r := bufio.NewReader(conn)
	offer, err := readSDP(r)
	if err == nil {
		err = pc.SetRemoteDescription(offer)
	}
	var answer webrtc.SessionDescription
	if err == nil {
		answer, err = pc.CreateAnswer(nil)
	}
	var local *webrtc.SessionDescription
	if err == nil {
		local, err = localDescription(pc, answer)
	}
	if err == nil {
		err = writeSDP(bufio.NewWriter(conn), local)
	}
	conn.Close()
	if err != nil {
		fmt.Println("signalling:", err)
		return 1
	}

	stats, err := newCSV(a.stats, rxStats, true)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer stats.Close()
	next := time.Now().UnixNano() + 1_000_000_000
	for sleepCtx(ctx, time.Duration(next-time.Now().UnixNano())) {
		now := time.Now().UnixNano()
		next += 1_000_000_000
		mu.Lock()
		var lostV any
		if maxSeqBefore >= 0 {
			lostV = max(0, maxSeq-maxSeqBefore-received)
		}
		row := []any{now, nil, nil, float64(payloadBytes * 8), nil, nil, nil, received, lostV,
			counter.twcc.Swap(0), counter.nacks.Swap(0)}
		received, payloadBytes, maxSeqBefore = 0, 0, maxSeq
		mu.Unlock()
		stats.row(row...)
	}
	return 0
}
