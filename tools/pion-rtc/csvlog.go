package main

// The CSV logs: the per-packet columns of mininet/accessnet/webrtc.py (TX_COLUMNS, RX_COLUMNS, which
// experiments.metrics reads for the [rtc] flow) and its per-second stats (TX_STATS, RX_STATS) followed by
// Pion's own columns. A value that does not exist in this stack (no REMB, no receiver-side estimate) is
// written empty, as the Python flow writes None.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	txColumns = []string{"seq", "send_ns", "size", "rate_bps", "frame"}
	rxColumns = []string{"seq", "send_ns", "recv_ns", "size", "frame"}
	// webrtc.TX_STATS, then GCC's state: its target before the encoder's clamp, the delay-based and the
	// loss-based estimates, the loss controller's average loss, the over-use detector's usage and the rate
	// controller's state, the delay-gradient estimate and the adaptive threshold (ms), the last measurement
	// (ms), and the TWCC feedback reports received in the second.
	txStats = []string{"t_ns", "target_bps", "remb_bps", "rembs", "sent_bps", "sent_packets", "nacked", "rtt_s",
		"fraction_lost", "packets_lost",
		"gcc_bps", "delay_bps", "loss_bps", "average_loss", "usage", "state", "estimate_ms", "threshold_ms",
		"measurement_ms", "twcc_reports"}
	// webrtc.RX_STATS (the estimate lives at the sender here: estimate_bps, remb_bps, usage, offset_ms and
	// threshold_ms stay empty), then the TWCC feedback reports and NACKed packets the receiver sent in the second.
	rxStats = []string{"t_ns", "estimate_bps", "remb_bps", "incoming_bps", "usage", "offset_ms", "threshold_ms",
		"received", "lost",
		"twcc_reports", "nacks"}
)

// csvWriter writes a header line, then rows of values formatted as webrtc._fmt does. Safe for concurrent use.
type csvWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	f     io.Closer
	ncols int
	flush bool // flush after every row (the per-second stats, as Python's line buffering)
}

func newCSV(path string, cols []string, flushRows bool) (*csvWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c := &csvWriter{w: bufio.NewWriterSize(f, 1<<16), f: f, ncols: len(cols), flush: flushRows}
	c.w.WriteString(strings.Join(cols, ",") + "\n")
	if flushRows {
		c.w.Flush()
	}
	return c, nil
}

// fmtValue is webrtc._fmt: nil as empty, floats as %.6g, the rest as is.
func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return fmtG6(x)
	case *float64:
		if x == nil {
			return ""
		}
		return fmtG6(*x)
	case *int64:
		if x == nil {
			return ""
		}
		return strconv.FormatInt(*x, 10)
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// fmtG6 is Python's f"{x:.6g}".
func fmtG6(x float64) string {
	return strconv.FormatFloat(x, 'g', 6, 64) // both drop trailing zeros and write exponents as e+06, e-07
}

func (c *csvWriter) row(vals ...any) {
	if len(vals) != c.ncols {
		panic(fmt.Sprintf("csv row of %d values for %d columns", len(vals), c.ncols))
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmtValue(v)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.w.WriteString(strings.Join(parts, ",") + "\n")
	if c.flush {
		c.w.Flush()
	}
}

func (c *csvWriter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.w.Flush(); err != nil {
		return err
	}
	return c.f.Close()
}
