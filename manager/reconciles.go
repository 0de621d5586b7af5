package manager

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/workqueue"
)

// Defaults of [Config.ReconcilesPerKey] and [Config.ReconcileKeys].
const (
	DefaultReconcilesPerKey = 8
	DefaultReconcileKeys    = 1024
)

// Reconcile is one reconcile of a key as [Manager.Reconciles] reports it.
type Reconcile struct {
	// ReconcileID is the reconcile's id: the reconcileID of its log lines,
	// the tend.reconcile.id of its span, the ReconcileID of its history
	// entries.
	ReconcileID string `json:"reconcileID"`
	// Start is when it began; Duration how long it ran.
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	// Triggers says why it ran (controller.TriggerStrings).
	Triggers []string `json:"triggers,omitempty"`
	// Result is success, requeue_after, error, terminal or panic.
	Result string `json:"result"`
	// Error is its error, if any.
	Error string `json:"error,omitempty"`
}

// reconcileLog keeps the last reconciles of the most recently reconciled
// keys of every controller. Recording allocates nothing once a key has its
// slots: each slot holds its triggers in an array, and the key evicted
// (the least recently reconciled) gives its slots to the next new key.
type reconcileLog struct {
	perKey, maxKeys int

	mu   sync.Mutex // guards keys and the list
	keys map[logKey]*keyLog
	head keyLog // sentinel of the list of keys, most recently reconciled first
}

type logKey struct{ controller, key string }

// keyLog is the last reconciles of one key, a ring of perKey slots.
type keyLog struct {
	id         logKey
	slots      []logSlot
	next, n    int
	prev, succ *keyLog // the list, by recency
}

type logSlot struct {
	id       string
	start    time.Time
	duration time.Duration
	result   string
	err      error
	triggers [workqueue.DefaultMaxTriggers]controller.Trigger
	nt       int
	dropped  int
}

// newReconcileLog returns the log of cfg's bounds, or nil when it is off.
func newReconcileLog(perKey, maxKeys int) *reconcileLog {
	if perKey < 0 || maxKeys < 0 {
		return nil
	}
	if perKey == 0 {
		perKey = DefaultReconcilesPerKey
	}
	if maxKeys == 0 {
		maxKeys = DefaultReconcileKeys
	}
	l := &reconcileLog{perKey: perKey, maxKeys: maxKeys, keys: make(map[logKey]*keyLog, maxKeys)}
	l.head.prev, l.head.succ = &l.head, &l.head
	return l
}

// recorder returns the Shared.OnReconciled of the controller named name.
func (l *reconcileLog) recorder(name string) func(controller.Reconciled) {
	if l == nil {
		return nil
	}
	return func(r controller.Reconciled) { l.record(name, &r) }
}

// record keeps r, a reconcile of the controller name.
func (l *reconcileLog) record(name string, r *controller.Reconciled) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := logKey{name, r.Key}
	k := l.keys[id]
	switch {
	case k != nil:
		l.unlink(k)
	case len(l.keys) < l.maxKeys:
		k = &keyLog{id: id, slots: make([]logSlot, l.perKey)}
		l.keys[id] = k
	default:
		k = l.head.prev // the least recently reconciled key
		l.unlink(k)
		delete(l.keys, k.id)
		k.id, k.next, k.n = id, 0, 0
		clear(k.slots)
		l.keys[id] = k
	}
	// link at the head
	k.prev, k.succ = &l.head, l.head.succ
	l.head.succ.prev = k
	l.head.succ = k

	s := &k.slots[k.next]
	k.next = (k.next + 1) % len(k.slots)
	k.n = min(k.n+1, len(k.slots))
	s.id, s.start, s.duration, s.result, s.err = r.ReconcileID, r.Start, r.Duration, r.Result, r.Err
	s.nt = copy(s.triggers[:], r.Triggers)
	s.dropped = r.Dropped + len(r.Triggers) - s.nt
}

func (l *reconcileLog) unlink(k *keyLog) {
	k.prev.succ, k.succ.prev = k.succ, k.prev
}

// get returns the last reconciles of key by the controller name, oldest
// first.
func (l *reconcileLog) get(name, key string) []Reconcile {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys[logKey{name, key}]
	if k == nil {
		return nil
	}
	out := make([]Reconcile, 0, k.n)
	for i := range k.n {
		s := &k.slots[(k.next-k.n+i+len(k.slots))%len(k.slots)]
		r := Reconcile{ReconcileID: s.id, Start: s.start, Duration: s.duration, Result: s.result}
		if s.nt > 0 || s.dropped > 0 {
			r.Triggers = controller.TriggerStrings(s.triggers[:s.nt], s.dropped)
		}
		if s.err != nil {
			r.Error = s.err.Error()
		}
		out = append(out, r)
	}
	return out
}

// Reconciles returns the last reconciles of key by the controller of kind
// (a controller [Drive] built is known by the kind it drives, any other by
// its name), oldest first, with their triggers, result and duration: at most
// [Config.ReconcilesPerKey] of them, for the [Config.ReconcileKeys] keys
// reconciled most recently. It returns nil when none is known, or when the
// manager keeps none. They are this replica's reconciles only, kept in
// memory: a restart forgets them.
func (m *Manager) Reconciles(kind, key string) []Reconcile {
	return m.reconciles.get(kind, key)
}

// reconcilesResponse is the JSON body of GET /reconciles.
type reconcilesResponse struct {
	Kind       string      `json:"kind"`
	Key        string      `json:"key"`
	Reconciles []Reconcile `json:"reconciles"`
}

// reconcilesHandler serves [Manager.Reconciles] as JSON:
// GET /reconciles?kind=K&key=X.
func (m *Manager) reconcilesHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, key := r.URL.Query().Get("kind"), r.URL.Query().Get("key")
		if kind == "" || key == "" {
			http.Error(w, "the query parameters kind and key are required", http.StatusBadRequest)
			return
		}
		body := reconcilesResponse{Kind: kind, Key: key, Reconciles: m.Reconciles(kind, key)}
		if body.Reconciles == nil {
			body.Reconciles = []Reconcile{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
}

// drives records that the controller name, built by Drive, drives kind.
func (m *Manager) drives(name, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kinds == nil {
		m.kinds = map[string]string{}
	}
	m.kinds[name] = kind
}

// kindOf returns the kind the controller name drives, or its name for a
// controller Drive did not build.
func (m *Manager) kindOf(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.kinds[name]; ok {
		return k
	}
	return name
}
