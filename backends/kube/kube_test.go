package kube_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/internal/servertest"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/storetest"
)

func TestMain(m *testing.M) {
	// client-go keeps one cached HTTP/2 connection per API server for the
	// life of the process.
	managertest.ReplicaMain(failover) // in a failover replica process: run it and exit
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}

// restConfig returns the configuration of the test cluster scripts/test.sh
// starts (API server, controllers, scheduler, kwok's nodes). Without one the
// test is skipped, except under CI, where it fails.
func restConfig(t *testing.T) *rest.Config { return kubeconfig(t, "TEND_KUBECONFIG") }

// storeConfig returns the configuration of the quiet API server
// scripts/test.sh starts for the store's own tests: nothing else writes to
// it, so only the tests move its revision.
func storeConfig(t *testing.T) *rest.Config { return kubeconfig(t, "TEND_KUBE_STORE_KUBECONFIG") }

// kubeconfig reads the kubeconfig whose path is in the environment variable
// env.
func kubeconfig(t *testing.T, env string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", servertest.Env(t, env, "kube"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

var namespaces atomic.Int64

// newStore returns a store on the quiet API server with kinds in a
// namespace of its own, with its custom resources installed.
func newStore(t *testing.T, kinds ...string) *kube.Store {
	t.Helper()
	return newStoreOn(t, storeConfig(t), kinds...)
}

// newStoreOn is newStore on the API server cfg reaches.
func newStoreOn(t *testing.T, cfg *rest.Config, kinds ...string) *kube.Store {
	t.Helper()
	ns := storeNamespace(t, cfg)
	s, err := kube.New(kube.Config{REST: cfg, Kinds: kinds, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.Install(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// storeNamespace creates a namespace for a store of the test's own and
// returns its name.
func storeNamespace(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	ns := fmt.Sprintf("tend-test-%d-%d", time.Now().UnixNano()%1e9, namespaces.Add(1))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
	}}
	if _, err := namespaces.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		// Without a namespace controller the namespace stays Terminating;
		// the test server is thrown away after the run.
		_ = namespaces.Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns
}

// TestConformance runs the store's suite on the Kubernetes API.
func TestConformance(t *testing.T) { onEachStoreServer(t, storetest.Run) }

// onEachStoreServer runs a conformance suite against the quiet API server,
// which has no watch cache and so passes watches to etcd, and against one on
// the same etcd with its watch cache, which answers watches itself, as API
// servers do by default.
func onEachStoreServer(t *testing.T, suite func(*testing.T, func(t *testing.T, kinds []string) store.Backend)) {
	for _, server := range []struct{ name, env string }{
		{"NoWatchCache", "TEND_KUBE_STORE_KUBECONFIG"},
		{"WatchCache", "TEND_KUBE_STORE_CACHED_KUBECONFIG"},
	} {
		t.Run(server.name, func(t *testing.T) {
			cfg := kubeconfig(t, server.env)
			etcdURL := os.Getenv("TEND_KUBE_STORE_ETCD")
			if etcdURL == "" {
				t.Fatalf("TEND_KUBE_STORE_ETCD is not set: scripts/servers/kube.sh exports it with %s", server.env)
			}
			suite(t, func(t *testing.T, kinds []string) store.Backend {
				return &compacting{Store: newStoreOn(t, cfg, kinds...), etcd: etcdURL}
			})
		})
	}
}

// TestCompactedByServer: a watch from a revision etcd has compacted fails
// with store.ErrCompacted, from the API server's own "410 Gone" or, for a
// watch starting exactly at the compaction point, its report that the
// previous state is gone; a watch from the compaction revision works.
func TestCompactedByServer(t *testing.T) {
	s := newStore(t, "Widget")
	ctx := t.Context()
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "w"}, Spec: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	revs := []int64{d.Meta.Revision}
	for i := range 3 {
		d.Status = fmt.Appendf(nil, `{"n":%d}`, i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			t.Fatal(err)
		}
		revs = append(revs, d.Meta.Revision)
	}
	if err := etcdCompact(ctx, os.Getenv("TEND_KUBE_STORE_ETCD"), revs[2]); err != nil {
		t.Fatal(err)
	}
	for _, from := range revs[:2] {
		w, err := s.Watch(ctx, "Widget", from)
		if err == nil {
			_, err = w.Next(ctx)
			w.Close()
		}
		if !errors.Is(err, store.ErrCompacted) {
			t.Fatalf("watch from revision %d after compaction at %d: got %v, want ErrCompacted", from, revs[2], err)
		}
	}
	w, err := s.Watch(ctx, "Widget", revs[2])
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e, err := w.Next(ctx)
	if err != nil || e.Revision != revs[3] || e.Type != store.Modified {
		t.Fatalf("watch from the compaction revision: got %v %v at %d, want Modified at %d", e.Type, err, e.Revision, revs[3])
	}
}

// TestWatchResumes: a watch outlives the API server's end of its stream
// (scripts/servers/kube.sh makes the server end watches after 5 to 10 s)
// and delivers every change once.
func TestWatchResumes(t *testing.T) {
	s := newStore(t, "Widget")
	timeout, err := strconv.Atoi(os.Getenv("TEND_KUBE_WATCH_TIMEOUT"))
	if err != nil {
		t.Fatalf("TEND_KUBE_WATCH_TIMEOUT %q: scripts/servers/kube.sh exports the API server's watch timeout", os.Getenv("TEND_KUBE_WATCH_TIMEOUT"))
	}
	ctx := t.Context()
	res, err := s.List(ctx, "Widget", store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "Widget", res.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var want []int64
	for i := range 2 {
		d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: fmt.Sprint("w", i)}, Spec: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d.Meta.Revision)
		if i == 0 {
			// Outlast the server's watch timeout (at most twice the minimum),
			// so the first stream has ended before the second change.
			time.Sleep(2*time.Duration(timeout)*time.Second + time.Second)
		}
	}
	for _, rev := range want {
		e, err := w.Next(ctx)
		if err != nil || e.Type != store.Added || e.Revision != rev {
			t.Fatalf("got %v at %d (%v), want Added at %d", e.Type, e.Revision, err, rev)
		}
	}
	quiet, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if e, err := w.Next(quiet); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the changes: got %v at %d (%v), want no event", e.Type, e.Revision, err)
	}
}

// TestWatchAheadWaits: a watch from a revision the API server has not
// reached stays open for longer than the few seconds an API server waits for
// a list from a revision ahead of it, with the watch cache or without, and
// then delivers the changes after that revision only.
func TestWatchAheadWaits(t *testing.T) {
	for _, server := range []struct{ name, env string }{
		{"NoWatchCache", "TEND_KUBE_STORE_KUBECONFIG"},
		{"WatchCache", "TEND_KUBE_STORE_CACHED_KUBECONFIG"},
	} {
		t.Run(server.name, func(t *testing.T) {
			s := newStoreOn(t, kubeconfig(t, server.env), "Widget")
			ctx := t.Context()
			res, err := s.List(ctx, "Widget", store.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			from := res.Revision + 2
			w, err := s.Watch(ctx, "Widget", from)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			quiet, cancel := context.WithTimeout(ctx, 4*time.Second)
			defer cancel()
			if e, err := w.Next(quiet); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("before the server reaches revision %d: got %v at %d (%v), want to wait", from, e.Type, e.Revision, err)
			}
			var want []int64
			for i := 0; len(want) < 2; i++ {
				d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: fmt.Sprint("w", i)}, Spec: []byte(`{}`)})
				if err != nil {
					t.Fatal(err)
				}
				if d.Meta.Revision > from {
					want = append(want, d.Meta.Revision)
				}
			}
			for _, rev := range want {
				e, err := w.Next(ctx)
				if err != nil || e.Type != store.Added || e.Revision != rev {
					t.Fatalf("got %v at %d (%v), want Added at %d", e.Type, e.Revision, err, rev)
				}
			}
		})
	}
}

// TestNotInstalled: a kind whose definition the API server does not serve
// fails with an error that says to install it.
func TestNotInstalled(t *testing.T) {
	s, err := kube.New(kube.Config{REST: restConfig(t), Kinds: []string{"Missing"}, Group: "missing.tend.dev"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(t.Context(), "Missing", "x")
	if !errors.Is(err, kube.ErrNotInstalled) || !errors.Is(err, store.ErrUnknownKind) {
		t.Fatalf("get of a kind that is not installed: got %v, want ErrNotInstalled", err)
	}
	_, err = s.List(t.Context(), "Missing", store.ListOptions{})
	if !errors.Is(err, kube.ErrNotInstalled) {
		t.Fatalf("list of a kind that is not installed: got %v, want ErrNotInstalled", err)
	}
}

// TestForbidden: a request RBAC refuses fails with an error naming the
// document and the rights to grant.
func TestForbidden(t *testing.T) {
	admin := newStore(t, "Widget")
	cfg := storeConfig(t)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "tend-nobody"}
	s, err := kube.New(kube.Config{REST: cfg, Kinds: []string{"Widget"}, Namespace: admin.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(t.Context(), "Widget", "w")
	var se *store.Error
	if !errors.As(err, &se) || se.Kind != "Widget" || se.Key != "w" ||
		!strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "grant the store's identity") {
		t.Fatalf("get without rights: got %v, want a forbidden store error naming the document and the rights", err)
	}
	_, err = s.AcquireLease(t.Context(), "tend/leader", "a", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "leases.coordination.k8s.io") {
		t.Fatalf("acquire lease without rights: got %v, want an error naming the rights", err)
	}
}

// compacting gives the store the [backend.Compactor] the conformance suite
// needs. Kubernetes has no API to compact; the API server leaves it to etcd,
// so the test compacts etcd directly, and a watch started before then is
// stopped at the first discarded change it has not delivered, as
// backend.Compactor requires.
type compacting struct {
	*kube.Store
	etcd      string
	compacted atomic.Int64
}

func (c *compacting) Compact(ctx context.Context, revision int64) error {
	if err := etcdCompact(ctx, c.etcd, revision); err != nil {
		return err
	}
	for {
		old := c.compacted.Load()
		if old >= revision || c.compacted.CompareAndSwap(old, revision) {
			return nil
		}
	}
}

func (c *compacting) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	w, err := c.Store.Watch(ctx, kind, from)
	if err != nil {
		return nil, err
	}
	return &compactedWatch{Watch: w, c: c, kind: kind}, nil
}

type compactedWatch struct {
	store.Watch
	c    *compacting
	kind string
	err  error
}

func (w *compactedWatch) Next(ctx context.Context) (store.Event, error) {
	if w.err != nil {
		return store.Event{}, w.err
	}
	e, err := w.Watch.Next(ctx)
	if err != nil {
		return e, err
	}
	if c := w.c.compacted.Load(); e.Revision <= c {
		w.err = &store.Error{Op: "watch", Kind: w.kind, Err: fmt.Errorf("%w: the change at %d was compacted at %d", store.ErrCompacted, e.Revision, c)}
		return store.Event{}, w.err
	}
	return e, nil
}

// etcdCompact discards etcd's history before revision through etcd's JSON
// gateway; etcd keeps each key's value as of revision, which the API server
// needs as the previous state of the next change. A revision beyond the
// current one is store.ErrInvalid.
func etcdCompact(ctx context.Context, url string, revision int64) error {
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := etcdCall(ctx, url+"/v3/kv/range", map[string]any{"key": base64.StdEncoding.EncodeToString([]byte("tend-test"))}, &rng); err != nil {
		return err
	}
	cur, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		return fmt.Errorf("etcd revision %q: %w", rng.Header.Revision, err)
	}
	if revision > cur {
		return fmt.Errorf("%w: revision %d is beyond the current %d", store.ErrInvalid, revision, cur)
	}
	return etcdCall(ctx, url+"/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(revision, 10), "physical": true}, nil)
}

func etcdCall(ctx context.Context, url string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Close = true // no idle connection outlives the test
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		if bytes.Contains(b, []byte("compacted")) {
			return nil // already compacted further
		}
		return fmt.Errorf("etcd %s: %s: %s", url, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
