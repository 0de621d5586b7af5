package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

// bulkCommands act on every document a selection selects, and check what
// they left.
var bulkCommands = [][]string{
	{"pause", "Widget"},
	{"pause", "Widget", "-l", "team=a", "--dry-run"},
	{"pause", "Widget", "-l", "team=a"},
	{"pause", "Widget", "-l", "team=a", "--reason", "INC-2", "--rate", "100/s", "--yes"},
	{"get", "Widget"},
	{"retry", "Widget", "--all", "--yes"},
	{"resume", "Widget", "--stuck", "--yes"},
	{"move", "Widget", "Ready", "--phase", "Fault", "--yes"},
	{"skip", "Widget", "configure", "--phase", "Creating", "--dry-run"},
	{"pause", "Widget", "--all", "--rate", "fast"},
	{"pause", "Widget", "w-ready", "--dry-run"},
	{"request", "Widget", "rebuild", "--phase", "Nowhere", "--yes"},
	{"pause", "Gadget", "--all", "--yes"},
	{"get", "Widget"},
}

func TestBulkMemory(t *testing.T) {
	_, path := memorySnapshot(t)
	golden(t, "bulk", transcript(t, "memory:"+path, bulkCommands...))
}

// TestBulkPostgres pauses 10,000 documents on PostgreSQL at an unlimited
// rate, and checks that every one of them is paused, once.
func TestBulkPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	addWidgets(t, s, 10_000-len(widgets))
	start := time.Now()
	r := tend(t, "--store", spec, "pause", "Widget", "--all", "--reason", "bulk", "--yes")
	t.Logf("10,000 documents paused in %v (4 at a time, on this machine under its load)", time.Since(start).Round(time.Millisecond))
	if wrong := checkBulkPaused(t, s, r, 10_000); len(wrong) > 0 {
		t.Fatalf("%q", wrong)
	}
}

// TestBulkPostgresPlanted checks that TestBulkPostgres's check catches a
// store that loses one write while reporting it done (behind the on-call
// API, where a test can put it).
func TestBulkPostgresPlanted(t *testing.T) {
	s, _ := postgresStore(t)
	produce(t, s)
	addWidgets(t, s, 200-len(widgets))
	url := apiServer(t, &losesOneWrite{Backend: s, key: "w-0100"}, true, nil)
	r := tendEnv(t, tokenEnv, "--server", url, "pause", "Widget", "--all", "--reason", "bulk", "--yes")
	wrong := checkBulkPaused(t, s, r, 200)
	if len(wrong) == 0 {
		t.Fatal("a store losing a write went unnoticed")
	}
	t.Logf("caught: %q", wrong)
}

// losesOneWrite is a store that drops the first status write of key and
// answers as if it had written it.
type losesOneWrite struct {
	store.Backend
	key  string
	once sync.Once
}

func (s *losesOneWrite) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	lost := false
	if d.Meta.Key == s.key {
		s.once.Do(func() { lost = true })
	}
	if lost {
		d.Meta.Revision++
		return d, nil
	}
	return s.Backend.UpdateStatus(ctx, d)
}

// addWidgets adds n widgets, w-0000…, as a controller left them: Ready.
func addWidgets(t *testing.T, b store.Backend, n int) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			d, err := b.Create(t.Context(), store.Document{Meta: store.Meta{Kind: widgetKind, Key: fmt.Sprintf("w-%04d", i), Labels: map[string]string{"team": "c"}},
				Spec: []byte(`{"state":"Up"}`)})
			if err != nil {
				return err
			}
			d.Status = []byte(`{"phase":"Ready","target":"Up"}`)
			_, err = b.UpdateStatus(t.Context(), d)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// checkBulkPaused returns what is wrong after a bulk pause of n documents
// that ran as r: its exit code, its summary, and any document of the store
// not paused by it.
func checkBulkPaused(t *testing.T, b store.Backend, r result, n int) []string {
	t.Helper()
	var wrong []string
	if summary := fmt.Sprintf("pause: %d done, 0 refused, of %d selected\n", n, n); r.code != 0 || !strings.HasSuffix(r.stdout, summary) {
		tail := r.stdout[max(0, len(r.stdout)-300):]
		wrong = append(wrong, fmt.Sprintf("exit %d, want 0 and the summary %q: …%s%s", r.code, summary, tail, r.stderr))
	}
	c, err := oncall.New(b, oncall.Config{})
	if err != nil {
		t.Fatal(err)
	}
	views, err := c.List(t.Context(), widgetKind, store.ListOptions{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != n {
		wrong = append(wrong, fmt.Sprintf("%d documents, want %d", len(views), n))
	}
	for _, v := range views {
		if v.Paused == nil || v.Paused.By != "tester" || v.Paused.Reason != "bulk" {
			wrong = append(wrong, fmt.Sprintf("%s not paused: %+v", v.Meta.Key, v.Paused))
		}
	}
	return wrong
}

// TestBulkServerCrossSite checks that a bulk action posted by a browser
// from another site is refused.
func TestBulkServerCrossSite(t *testing.T) {
	s := liveMemory(t)
	url := apiServer(t, s, true, nil)
	req, _ := http.NewRequest(http.MethodPost, url+"kinds/Widget/bulk", strings.NewReader(`{"selection":{"kind":"Widget","all":true},"action":{"name":"pause"}}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a cross-site bulk action: %s, want 403 Forbidden", resp.Status)
	}
}

func TestBulkCommandsPostgres(t *testing.T) {
	s, spec := postgresStore(t)
	produce(t, s)
	golden(t, "bulk", transcript(t, spec, bulkCommands...))
}
