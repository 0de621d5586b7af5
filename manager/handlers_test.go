package manager_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/tendhq/tend/internal/doctest"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
)

func TestHandlerFallback(t *testing.T) {
	c, err := controller.New(controller.Config{
		Name:       "widgets",
		Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil }),
		Sources:    []controller.Source{controller.For(doctest.NewStore(t, memory.Config{}), "Widget")},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Config{Controllers: []*controller.Controller{c}})
	if err != nil {
		t.Fatal(err)
	}
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("console " + r.URL.Path)) })
	h := m.Handler(manager.HandlerConfig{Fallback: console})
	if code, body := serve(h, http.MethodGet, "/console/kinds"); code != http.StatusOK || body != "console /console/kinds" {
		t.Errorf("GET /console/kinds: %d %q", code, body)
	}
	if code, _ := serve(h, http.MethodGet, "/readyz"); code == http.StatusNotFound {
		t.Error("/readyz is gone beside the fallback")
	}
	if code, _ := serve(m.Handler(manager.HandlerConfig{}), http.MethodGet, "/console/kinds"); code != http.StatusNotFound {
		t.Errorf("without a fallback, GET /console/kinds: %d, want 404", code)
	}
}
