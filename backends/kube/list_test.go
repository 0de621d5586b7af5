package kube_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/store"
)

// listServer answers the List requests of the store's Widget resource as
// the API server does: snapshots by resourceVersion, objects in name order,
// at most two per response whatever the limit (so the store must follow
// the server's continue tokens), "410 Expired" for a compacted version.
type listServer struct {
	t  *testing.T
	mu sync.Mutex // guards the fields below
	// snapshots maps a resourceVersion to the keys stored at it.
	snapshots map[int][]string
	current   int
	// exact records the resourceVersions asked for with
	// resourceVersionMatch=Exact.
	exact []string
}

func (ls *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if r.Method != http.MethodGet || r.URL.Path != "/apis/"+kube.DefaultGroup+"/v1/namespaces/default/widgets" {
		ls.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	rv, offset := ls.current, 0
	switch {
	case q.Get("continue") != "":
		if q.Get("resourceVersion") != "" || q.Get("resourceVersionMatch") != "" {
			ls.t.Errorf("continue with a resourceVersion: %s", r.URL.RawQuery)
		}
		if _, err := fmt.Sscanf(q.Get("continue"), "%d:%d", &rv, &offset); err != nil {
			ls.t.Errorf("bad continue %q", q.Get("continue"))
		}
	case q.Get("resourceVersionMatch") == "Exact":
		ls.exact = append(ls.exact, q.Get("resourceVersion"))
		rv, _ = strconv.Atoi(q.Get("resourceVersion"))
	}
	keys, ok := ls.snapshots[rv]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"resourceVersion %d is too old"}`, rv)
		return
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(kube.ObjectName(a), kube.ObjectName(b)) })
	n := 2
	if limit, _ := strconv.Atoi(q.Get("limit")); limit > 0 && limit < n {
		n = limit
	}
	end, cont := min(offset+n, len(keys)), ""
	if end < len(keys) {
		cont = fmt.Sprintf("%d:%d", rv, end)
	}
	items := []any{}
	for _, key := range keys[offset:end] {
		items = append(items, map[string]any{
			"apiVersion": kube.DefaultGroup + "/v1", "kind": "Widget",
			"metadata": map[string]any{
				"name": kube.ObjectName(key), "namespace": "default", "uid": "uid-" + key, "resourceVersion": "3",
				"creationTimestamp": "2026-01-01T00:00:00Z", "annotations": map[string]string{kube.DefaultGroup + "/key": key},
			},
			"spec": map[string]any{},
		})
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": kube.DefaultGroup + "/v1", "kind": "WidgetList",
		"metadata": map[string]any{"resourceVersion": strconv.Itoa(rv), "continue": cont},
		"items":    items,
	}); err != nil {
		ls.t.Error(err)
	}
}

func (ls *listServer) set(f func()) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	f()
}

// TestListPages: the store's pages are in key order (not the API server's
// name order), read at the first page's resourceVersion with
// resourceVersionMatch=Exact whatever was written since, through as many of
// the API server's own pages as it takes; a compacted resourceVersion fails
// the page with store.ErrCompacted, and a malformed token with
// store.ErrInvalidContinue before any request.
func TestListPages(t *testing.T) {
	ls := &listServer{t: t, current: 10, snapshots: map[int][]string{
		10: {"e", "a", "d", "b", "c"},
		20: {"e", "a", "d", "bb", "b"}, // c removed, bb created
	}}
	srv := httptest.NewServer(ls)
	defer srv.Close()
	s, err := kube.New(kube.Config{REST: &rest.Config{Host: srv.URL}, Kinds: []string{"Widget"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	keys := func(res store.ListResult) string {
		var ks []string
		for _, d := range res.Items {
			ks = append(ks, d.Meta.Key)
		}
		return strings.Join(ks, ",")
	}

	all, err := s.List(ctx, "Widget", store.ListOptions{})
	if err != nil || keys(all) != "a,b,c,d,e" || all.Revision != 10 || all.Continue != "" {
		t.Fatalf("list: %q at %d, continue %q, %v", keys(all), all.Revision, all.Continue, err)
	}
	first, err := s.List(ctx, "Widget", store.ListOptions{Limit: 2})
	if err != nil || keys(first) != "a,b" || first.Revision != 10 || first.Continue == "" {
		t.Fatalf("first page: %q at %d, continue %q, %v", keys(first), first.Revision, first.Continue, err)
	}
	ls.set(func() { ls.current = 20 })
	opts := store.ListOptions{Limit: 2, Continue: first.Continue}
	var pages []string
	for opts.Continue != "" {
		res, err := s.List(ctx, "Widget", opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Revision != 10 {
			t.Fatalf("page at revision %d, want the first page's 10", res.Revision)
		}
		pages, opts.Continue = append(pages, keys(res)), res.Continue
	}
	if got := strings.Join(pages, " | "); got != "c,d | e" {
		t.Fatalf("later pages %q, want the snapshot of the first: c,d | e", got)
	}
	ls.set(func() {
		if !slices.Equal(ls.exact, []string{"10", "10"}) {
			t.Errorf("exact resourceVersions asked for: %q, want 10 for each later page", ls.exact)
		}
		delete(ls.snapshots, 10) // compacted
	})
	if _, err := s.List(ctx, "Widget", store.ListOptions{Limit: 2, Continue: first.Continue}); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("page at a compacted resourceVersion: got %v, want ErrCompacted", err)
	}
	if _, err := s.List(ctx, "Widget", store.ListOptions{Limit: 2, Continue: "bad"}); !errors.Is(err, store.ErrInvalidContinue) {
		t.Fatalf("malformed token: got %v, want ErrInvalidContinue", err)
	}
}
