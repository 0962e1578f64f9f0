// pion-rtc: the [webrtc] flow of accessnet with Pion's full send-side GCC ([webrtc] stack = "pion").
//
//	pion-rtc send --dst IP --local-ip IP [--signal-port 5008] [--start-kbps 128] [--min-kbps 50]
//	              [--max-kbps 10000] [--fps 30] --duration S [--start-at NS] --log CSV --stats CSV
//	pion-rtc recv --local-ip IP [--signal-port 5008] [--max-burst-ms 100] --duration S --log CSV --stats CSV
//	pion-rtc sizes --start-kbps K --fps F --frames N   (the encoder's packet sizes, one frame a line)
//
// The flags, the synthetic encoder, the signalling (one JSON offer and one JSON answer, a line each, over a
// TCP connection to the receiver's --signal-port), the payload trailer and the CSV logs are those of
// `python -m accessnet.webrtc` (mininet/accessnet/webrtc.py); see that module's docstring for the columns.
// What differs is the stack: pion/webrtc with pion/interceptor's cc + gcc (send-side bandwidth estimation:
// the delay-based estimate from transport-wide feedback (TWCC), the loss-based controller, the leaky-bucket
// pacer at 1.5 x the target) and the receiver's TWCC feedback, RTCP reports and NACKs. As in the Python flow
// the sender does not retransmit (a NACK is counted in `nacked`), and the encoder's target follows the
// estimate, clamped to [--min-kbps, --max-kbps]. --max-burst-ms is accepted for the same command line and
// has no effect (it is the aiortc receiver's inter-arrival cap; Pion's estimator is at the sender).
package main

import (
	"flag"
	"fmt"
	"os"
)

const signalPort = 5008

type sendArgs struct {
	dst, localIP                               string
	signalPort                                 int
	startKbps, minKbps, maxKbps, fps, duration float64
	startAt                                    int64
	log, stats                                 string
}

type recvArgs struct {
	localIP              string
	signalPort           int
	maxBurstMs, duration float64
	log, stats           string
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: pion-rtc send|recv|sizes [flags] (pion-rtc send -h)")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "send":
		fs := flag.NewFlagSet("send", flag.ExitOnError)
		var a sendArgs
		fs.StringVar(&a.dst, "dst", "", "the receiver's address (signalling)")
		fs.StringVar(&a.localIP, "local-ip", "", "this host's address: the only ICE host candidate")
		fs.IntVar(&a.signalPort, "signal-port", signalPort, "the receiver's signalling port (TCP)")
		fs.Float64Var(&a.startKbps, "start-kbps", 128, "")
		fs.Float64Var(&a.minKbps, "min-kbps", 50, "")
		fs.Float64Var(&a.maxKbps, "max-kbps", 10_000, "")
		fs.Float64Var(&a.fps, "fps", 30, "")
		fs.Float64Var(&a.duration, "duration", -1, "seconds of media from the start time (required)")
		fs.Int64Var(&a.startAt, "start-at", 0, "absolute start of the media, ns (CLOCK_REALTIME)")
		fs.StringVar(&a.log, "log", "", "per packet sent (csv, required)")
		fs.StringVar(&a.stats, "stats", "", "per second (csv, required)")
		fs.Parse(os.Args[2:])
		if a.dst == "" || a.localIP == "" || a.duration < 0 || a.log == "" || a.stats == "" {
			fmt.Fprintln(os.Stderr, "pion-rtc send: --dst, --local-ip, --duration, --log and --stats are required")
			os.Exit(2)
		}
		if !(0 < a.minKbps && a.minKbps <= a.startKbps && a.startKbps <= a.maxKbps && 0 < a.fps && a.fps <= 1000) {
			fmt.Fprintln(os.Stderr, "pion-rtc send: need 0 < min-kbps <= start-kbps <= max-kbps and 0 < fps <= 1000")
			os.Exit(2)
		}
		os.Exit(send(a))
	case "recv":
		fs := flag.NewFlagSet("recv", flag.ExitOnError)
		var a recvArgs
		fs.StringVar(&a.localIP, "local-ip", "", "this host's address: the signalling listener and the only ICE host candidate")
		fs.IntVar(&a.signalPort, "signal-port", signalPort, "")
		fs.Float64Var(&a.maxBurstMs, "max-burst-ms", 100, "accepted for the Python flow's command line; no effect here")
		fs.Float64Var(&a.duration, "duration", -1, "seconds (required)")
		fs.StringVar(&a.log, "log", "", "per packet received (csv, required)")
		fs.StringVar(&a.stats, "stats", "", "per second (csv, required)")
		fs.Parse(os.Args[2:])
		if a.localIP == "" || a.duration < 0 || a.log == "" || a.stats == "" {
			fmt.Fprintln(os.Stderr, "pion-rtc recv: --local-ip, --duration, --log and --stats are required")
			os.Exit(2)
		}
		os.Exit(recv(a))
	case "sizes":
		fs := flag.NewFlagSet("sizes", flag.ExitOnError)
		kbps := fs.Float64("start-kbps", 128, "")
		fps := fs.Float64("fps", 30, "")
		frames := fs.Int("frames", 30, "")
		fs.Parse(os.Args[2:])
		e := newEncoder(*kbps*1e3, 0, 1e12, *fps)
		for i := 0; i < *frames; i++ {
			ps, _ := e.payloads()
			for j, p := range ps {
				if j > 0 {
					fmt.Print(" ")
				}
				fmt.Print(len(p))
			}
			fmt.Println()
		}
	default:
		usage()
	}
}
