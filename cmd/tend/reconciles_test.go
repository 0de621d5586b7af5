package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/manager"
)

// TestDescribeLastReconciles runs describe --manager against the handler of
// a manager that reconciled the document: its last reconciles, with their
// triggers and results, follow the document.
func TestDescribeLastReconciles(t *testing.T) {
	_, path := memorySnapshot(t)
	keys := make(chan string, 1)
	c, err := controller.New(controller.Config{
		Name:       "Widget",
		Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil }),
		Sources:    []controller.Source{controller.Channel(keys)},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Config{Controllers: []*controller.Controller{c}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	keys <- "w-ready"
	for deadline := time.Now().Add(10 * time.Second); len(m.Reconciles("Widget", "w-ready")) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the manager recorded no reconcile")
		}
	}
	srv := httptest.NewServer(m.Handler(manager.HandlerConfig{}))
	defer srv.Close()

	r := tend(t, "--store", "memory:"+path, "describe", "Widget", "w-ready", "--manager", srv.URL)
	_, last, found := strings.Cut(r.stdout, "Last reconciles:\n")
	if r.code != 0 || !found || !strings.Contains(last, "channel") || !strings.Contains(last, "success") ||
		!strings.Contains(last, m.Reconciles("Widget", "w-ready")[0].ReconcileID) {
		t.Errorf("describe --manager: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = tend(t, "--store", "memory:"+path, "describe", "Widget", "w-fault", "--manager", srv.URL)
	if r.code != 0 || !strings.Contains(r.stdout, "Last reconciles:\n  none known to the manager\n") {
		t.Errorf("describe --manager of a document never reconciled: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = tend(t, "--store", "memory:"+path, "describe", "Widget", "w-ready", "--manager", srv.URL+"/nothing-here")
	if r.code == 0 || !strings.Contains(r.stderr, "--manager") {
		t.Errorf("describe --manager with a wrong URL: exit %d\n%s", r.code, r.stderr)
	}
}
