// Package contention checks that history loses nothing under contention:
// operators issue commands to one document while several replicas drive
// it, and every command must end with exactly one "issued" and one outcome
// entry in the document's history. Each backend's tests run [Check] on
// their store.
package contention

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/registry"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Kind is the kind of the document the operators and replicas contend for.
const Kind = "Job"

// Key is the key of that document.
const Key = "job-0"

// Kinds returns the kinds a store needs for [Check].
func Kinds() []string { return []string{Kind, history.KindFor(Kind), registry.Kind} }

// Config sizes a [Check].
type Config struct {
	// Operators issue Commands commands each, all at once, while Replicas
	// drive the document.
	Operators, Commands, Replicas int
	// Timeout bounds the check: how long the commands may take to be
	// carried out.
	Timeout time.Duration
}

type jobSpec struct {
	State string `json:"state"`
}

func (s jobSpec) Intent() string { return s.State }

type jobStatus struct {
	sm.Status[string, string]
}

// machine is a job that runs once per "run" request.
func machine() (*sm.Machine[string, string], error) {
	return sm.New(sm.Definition[string, string]{
		Name:    Kind,
		States:  []string{"Up"},
		Initial: "Creating",
		Phases: []sm.PhaseSpec[string]{
			{Phase: "Creating", Type: sm.Transitional, Steps: []string{"create"}, Completion: []sm.Require{sm.Is("present")}, Then: "Ready"},
			{Phase: "Ready"},
			{Phase: "Running", Type: sm.Transitional, Steps: []string{"run"}, Completion: []sm.Require{sm.Is("present")}, Then: "Ready"},
			{Phase: "Failed", Type: sm.Fault},
		},
		Settled:  []sm.Settle[string, string]{{State: "Up", Phase: "Ready"}},
		Requests: []sm.RequestRule[string]{{Name: "run", Serve: []sm.Edge[string]{{From: "Ready", To: "Running"}}}},
	})
}

// Check runs cfg.Replicas controllers of one job on b, has cfg.Operators
// operators issue cfg.Commands "run" requests each to it, waits until
// they are all carried out and the replicas stopped, and returns an error
// naming each command whose issued or outcome entry is missing or doubled
// in the job's history.
func Check(ctx context.Context, b store.Backend, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	m, err := machine()
	if err != nil {
		return err
	}
	if _, err := registry.Put(ctx, b, registry.Entry{Kind: Kind, Machine: m.Descriptor()}); err != nil {
		return err
	}
	coll, err := store.NewCollection[jobSpec, jobStatus](b, Kind, store.CollectionConfig{})
	if err != nil {
		return err
	}
	if _, err := coll.Create(ctx, &store.Object[jobSpec, jobStatus]{Meta: store.Meta{Key: Key}, Spec: jobSpec{State: "Up"}}); err != nil {
		return err
	}
	keep := history.RecorderConfig{MaxEntries: 100 * cfg.Operators * cfg.Commands, FlushInterval: 10 * time.Millisecond}

	runCtx, stop := context.WithCancel(ctx)
	var replicas sync.WaitGroup
	runErrs := make(chan error, 2*cfg.Replicas)
	defer func() {
		stop()
		replicas.Wait()
	}()
	done := func(context.Context, *store.Object[jobSpec, jobStatus], string) (sm.Outcome, error) {
		return sm.Done, nil
	}
	for i := range cfg.Replicas {
		rc := keep
		rc.Replica = fmt.Sprint("r", i)
		rec, err := history.NewRecorder(b, rc)
		if err != nil {
			return err
		}
		d, err := driver.New(coll, m, driver.Config[jobSpec, jobStatus]{
			Steps: map[string]driver.StepFunc[jobSpec, jobStatus]{"create": done, "run": done},
			Observers: map[string]driver.ObserverFunc[jobSpec, jobStatus]{
				"present": func(context.Context, *store.Object[jobSpec, jobStatus]) (bool, string, error) { return true, "", nil },
			},
			History: rec,
		})
		if err != nil {
			return err
		}
		c, err := controller.New(controller.Config{Name: rc.Replica, Reconciler: d, Sources: []controller.Source{d.Source()}})
		if err != nil {
			return err
		}
		replicas.Go(func() { runErrs <- rec.Run(runCtx) })
		replicas.Go(func() { runErrs <- c.Run(runCtx) })
	}

	var (
		operators sync.WaitGroup
		mu        sync.Mutex // guards ids and errs
		ids       []string
		errs      []error
	)
	for i := range cfg.Operators {
		client, err := oncall.New(b, oncall.Config{Actor: fmt.Sprint("op-", i), History: keep})
		if err != nil {
			return err
		}
		operators.Go(func() {
			for range cfg.Commands {
				cmd, err := client.Request(ctx, Kind, Key, "run")
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids = append(ids, cmd.ID)
				}
				mu.Unlock()
			}
		})
	}
	operators.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for {
		obj, err := coll.Get(ctx, Key)
		if err != nil {
			return err
		}
		if len(obj.Status.Commands) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d commands still pending: %w", len(obj.Status.Commands), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	replicas.Wait()
	close(runErrs)
	for err := range runErrs {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	entries, err := history.NewReader(b).History(ctx, Kind, Key)
	if err != nil {
		return err
	}
	return count(entries, ids)
}

// count returns an error naming each command of ids whose issued and
// outcome entries are not in entries exactly once each.
func count(entries []history.Entry, ids []string) error {
	issued, outcomes := map[string]int{}, map[string]int{}
	for _, e := range entries {
		if e.Type != history.Operator {
			continue
		}
		switch e.Outcome {
		case oncall.OutcomeIssued:
			issued[e.Command] += e.Times()
		case oncall.OutcomeApplied, oncall.OutcomeRefused:
			outcomes[e.Command] += e.Times()
		}
	}
	var errs []error
	slices.Sort(ids)
	for _, id := range ids {
		if issued[id] != 1 || outcomes[id] != 1 {
			errs = append(errs, fmt.Errorf("command %s: %d issued entries, %d outcome entries, want one of each", id, issued[id], outcomes[id]))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d commands not recorded exactly once:\n%w", len(errs), len(ids), errors.Join(errs...))
	}
	return nil
}

// Lying is a store that stores every Every-th history write but reports
// it failed, as when a connection drops after the commit: a fault planted
// from outside, under which history must still keep each entry once.
type Lying struct {
	store.Backend
	Every int

	mu     sync.Mutex // guards writes
	writes int
}

// ErrLost is what a [Lying] store reports of the writes it stored.
var ErrLost = errors.New("connection lost after commit")

func (l *Lying) lie(doc store.Document, err error) (store.Document, error) {
	if err != nil || !strings.HasSuffix(doc.Meta.Kind, history.KindSuffix) {
		return doc, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writes++; l.writes%l.Every == 0 {
		return store.Document{}, ErrLost
	}
	return doc, nil
}

// Create implements store.Backend, lying about history documents.
func (l *Lying) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	return l.lie(l.Backend.Create(ctx, doc))
}

// UpdateSpec implements store.Backend, lying about history documents.
func (l *Lying) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	return l.lie(l.Backend.UpdateSpec(ctx, doc))
}
