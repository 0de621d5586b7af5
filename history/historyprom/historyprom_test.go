package historyprom_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/history/historyprom"
)

func TestSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	p := historyprom.New(historyprom.Config{Registerer: reg})
	stats := history.RecorderStats{Written: 7, DroppedBufferFull: 2, DroppedWriteFailed: 3}
	if err := p.Track(func() history.RecorderStats { return stats }); err != nil {
		t.Fatal(err)
	}
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP tend_history_entries_dropped_total History entries dropped, by reason: buffer_full (pushed out of a full buffer) or write_failed (refused by the store for good, or unwritten when the recorder stopped).
# TYPE tend_history_entries_dropped_total counter
tend_history_entries_dropped_total{reason="buffer_full"} 2
tend_history_entries_dropped_total{reason="write_failed"} 3
# HELP tend_history_entries_written_total History entries written to the store.
# TYPE tend_history_entries_written_total counter
tend_history_entries_written_total 7
`))
	if err != nil {
		t.Fatal(err)
	}
	// A registry takes one recorder.
	if err := p.Track(func() history.RecorderStats { return stats }); err == nil {
		t.Fatal("a second recorder registered with the same registry")
	}
}

func TestNoRegisterer(t *testing.T) {
	b, err := memory.New(memory.Config{Kinds: history.Kinds("Gateway")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = history.NewRecorder(b, history.RecorderConfig{Metrics: historyprom.New(historyprom.Config{})})
	if !errors.Is(err, historyprom.ErrNoRegisterer) {
		t.Fatalf("NewRecorder: %v, want ErrNoRegisterer", err)
	}
}
