package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The Python flow's columns (mininet/accessnet/webrtc.py TX_COLUMNS, RX_COLUMNS, TX_STATS, RX_STATS), copied
// here: tests/test_webrtc.py checks the same prefix against the Python module itself.
var (
	pyTx      = "seq,send_ns,size,rate_bps,frame"
	pyRx      = "seq,send_ns,recv_ns,size,frame"
	pyTxStats = "t_ns,target_bps,remb_bps,rembs,sent_bps,sent_packets,nacked,rtt_s,fraction_lost,packets_lost"
	pyRxStats = "t_ns,estimate_bps,remb_bps,incoming_bps,usage,offset_ms,threshold_ms,received,lost"
)

func TestColumnsArePythonsThenPions(t *testing.T) {
	if strings.Join(txColumns, ",") != pyTx || strings.Join(rxColumns, ",") != pyRx {
		t.Error("per-packet columns differ from the Python flow's")
	}
	if !strings.HasPrefix(strings.Join(txStats, ","), pyTxStats+",") ||
		!strings.HasPrefix(strings.Join(rxStats, ","), pyRxStats+",") {
		t.Error("the stats do not begin with the Python flow's columns")
	}
}

func TestFormatIsPythons(t *testing.T) {
	// Python: f"{v:.6g}" for floats, "" for None, str() for the rest
	f := 1.5
	var nf *float64
	n := int64(-3)
	cases := map[string]any{"": nil, "1e+06": 1e6, "0.0001": 0.0001, "1e-05": 1e-05, "2": 2.0,
		"0.333333": 1.0 / 3, "123457": 123456.7, "1.5": &f, "-3": &n, "normal": "normal", "42": 42,
		"1795000000123456789": int64(1_795_000_000_123_456_789)}
	cases[""] = nf
	for want, v := range cases {
		if got := fmtValue(v); got != want {
			t.Errorf("fmtValue(%v) = %q, want %q", v, got, want)
		}
	}
	if fmtValue(nil) != "" {
		t.Error("nil")
	}
}

func TestWriterWritesAHeaderAndRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.csv")
	w, err := newCSV(path, []string{"a", "b", "c"}, true)
	if err != nil {
		t.Fatal(err)
	}
	w.row(int64(1), nil, 0.25)
	b, _ := os.ReadFile(path) // flushed per row
	if string(b) != "a,b,c\n1,,0.25\n" {
		t.Errorf("%q", b)
	}
	w.row("x", 2, 1e7)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if string(b) != "a,b,c\n1,,0.25\nx,2,1e+07\n" {
		t.Errorf("%q", b)
	}
	defer func() {
		if recover() == nil {
			t.Error("a row of the wrong width was written")
		}
	}()
	w.row(1)
}

func TestNTPMiddle(t *testing.T) {
	// RTT = now - LSR - DLSR in 1/65536 s: 1.5 s after a time, the middle 32 bits grow by 1.5 * 65536
	a := ntpMiddle(mustTime("2026-11-26T19:00:00Z"))
	b := ntpMiddle(mustTime("2026-11-26T19:00:01.5Z"))
	if b-a != 98304 {
		t.Errorf("%d", b-a)
	}
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}
