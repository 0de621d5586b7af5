package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/manager"
)

// TestManagerReconciles runs a hand-built controller under a manager and
// reads the last reconciles of a key, with their triggers and results,
// from Manager.Reconciles and from GET /reconciles.
func TestManagerReconciles(t *testing.T) {
	var calls atomic.Int32
	keys := make(chan string, 1)
	c, err := controller.New(controller.Config{
		Name: "widgets",
		Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
			if calls.Add(1) == 1 {
				return controller.Result{}, errors.New("boom")
			}
			return controller.Result{}, nil
		}),
		Sources: []controller.Source{controller.Channel(keys)},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Config{Controllers: []*controller.Controller{c}, ReconcilesPerKey: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	// A reconcile is recorded after its reconciler returns: wait for the
	// records, not for the calls.
	keys <- "a" // fails, then is retried
	var retried []manager.Reconcile
	for deadline := time.Now().Add(10 * time.Second); len(retried) < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no retry recorded: %+v", retried)
		}
		retried = m.Reconciles("widgets", "a")
	}
	keys <- "a"
	for deadline := time.Now().Add(10 * time.Second); m.Reconciles("widgets", "a")[1].ReconcileID == retried[1].ReconcileID; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the channel's reconcile was not recorded: %+v", m.Reconciles("widgets", "a"))
		}
	}
	// The failure (channel) has left the two kept: the retry, then the
	// channel's.
	got := m.Reconciles("widgets", "a")
	var triggers [][]string
	var results []string
	for _, r := range got {
		triggers = append(triggers, r.Triggers)
		results = append(results, r.Result)
	}
	if len(got) != 2 || !slices.Equal(triggers[0], []string{"retry"}) || !slices.Equal(triggers[1], []string{"channel"}) ||
		!slices.Equal(results, []string{"success", "success"}) {
		t.Errorf("reconciles of a: %+v, want the retry then the channel's, both successes", got)
	}

	srv := httptest.NewServer(m.Handler(manager.HandlerConfig{}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/reconciles?kind=widgets&key=a")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Kind, Key  string
		Reconciles []manager.Reconcile
	}
	err = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || body.Kind != "widgets" || len(body.Reconciles) != 2 ||
		body.Reconciles[1].ReconcileID != got[1].ReconcileID {
		t.Errorf("GET /reconciles: %d %+v %v, want the two reconciles", res.StatusCode, body, err)
	}
	res, err = http.Get(srv.URL + "/reconciles?kind=widgets")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /reconciles without key: %d, want 400", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
