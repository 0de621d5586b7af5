package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
)

// kindGate holds the controllers of one driven kind until the kind's
// machine is checked against what is recorded (see [Manager.Run]), keeps
// them from running when it must not run, and stops them when the kind
// stands down.
type kindGate struct {
	kind    string
	checked chan struct{}   // closed once the kind runs or is held
	down    context.Context // ends when the kind is held or stands down
	stop    context.CancelFunc

	mu  sync.Mutex // guards err
	err error      // why the kind does not run (held or stood down); nil while it runs
}

func newKindGate(kind string) *kindGate {
	down, stop := context.WithCancel(context.Background())
	return &kindGate{kind: kind, checked: make(chan struct{}), down: down, stop: stop}
}

// run lets the kind's controllers run.
func (g *kindGate) run() { close(g.checked) }

// hold keeps the kind's controllers from running, for err.
func (g *kindGate) hold(err error) {
	g.setErr(err)
	g.stop()
	close(g.checked)
}

// standDown stops the kind's controllers, for err.
func (g *kindGate) standDown(err error) {
	g.setErr(err)
	g.stop()
}

func (g *kindGate) setErr(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.err = err
}

// reason returns why the kind does not run, nil when it runs, or
// errChecking while its machine is being checked.
func (g *kindGate) reason() error {
	select {
	case <-g.checked:
	default:
		return errChecking
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

var errChecking = errors.New("checking the machine against the one recorded and the documents")

// gates are the kind gates of one Run, by kind and by controller.
type gates struct {
	kinds        map[string]*kindGate
	byController map[*controller.Controller]*kindGate
}

// newGates returns a gate for each kind the controllers drive, and the
// registrant of each kind.
func newGates(cs []*controller.Controller) (*gates, map[string]registrant) {
	g := &gates{kinds: map[string]*kindGate{}, byController: map[*controller.Controller]*kindGate{}}
	regs := map[string]registrant{}
	for _, c := range cs {
		r, ok := c.Reconciler().(registrant)
		if !ok {
			continue
		}
		kind := r.Registration().Kind
		if g.kinds[kind] == nil {
			g.kinds[kind] = newKindGate(kind)
			regs[kind] = r
		}
		g.byController[c] = g.kinds[kind]
	}
	return g, regs
}

// runGated runs c with run unless its kind's gate holds it: it waits for
// the kind's check, does not run a kind held or stood down (it waits for
// stop instead), and stops c when its kind stands down.
func (m *Manager) runGated(stop context.Context, c *controller.Controller, run func(context.Context) error) error {
	g := m.gateOf(c)
	if g == nil {
		return run(stop)
	}
	select {
	case <-g.checked:
	case <-stop.Done():
		return nil
	}
	if g.down.Err() != nil {
		<-stop.Done() // held or stood down
		return nil
	}
	ctx, cancel := context.WithCancel(stop)
	defer cancel()
	defer context.AfterFunc(g.down, cancel)()
	err := run(ctx)
	if g.down.Err() != nil {
		<-stop.Done() // stood down: the kind's work is a newer replica's now
		return nil
	}
	return err
}

func (m *Manager) gateOf(c *controller.Controller) *kindGate {
	if g := m.gates.Load(); g != nil {
		return g.byController[c]
	}
	return nil
}

// KindError returns why this replica does not run the controllers of the
// driven kind: an error matching statemachine.ErrStranded (a
// *statemachine.StrandedError listing the documents) when its machine
// cannot carry documents the store holds, or one matching
// registry.ErrSuperseded when a newer machine is registered for the kind.
// It returns nil while they run, while Run is not running, and for a kind
// no driver of the manager drives.
func (m *Manager) KindError(kind string) error {
	g := m.gates.Load()
	if g == nil || g.kinds[kind] == nil {
		return nil
	}
	if err := g.kinds[kind].reason(); err != errChecking {
		return err
	}
	return nil
}

// machinesCheck is the readiness check "machines": every kind's machine
// is checked, and none is held or stood down. A manager that drives no
// machine has none: it reports false.
func (m *Manager) machinesCheck() (check, bool) {
	c := check{name: "machines"}
	if !slices.ContainsFunc(m.controllerList(), func(c *controller.Controller) bool {
		_, ok := c.Reconciler().(registrant)
		return ok
	}) {
		return c, false
	}
	g := m.gates.Load()
	if g == nil {
		return c, true
	}
	var reasons []string
	for kind, kg := range g.kinds {
		if err := kg.reason(); err != nil {
			reasons = append(reasons, "kind "+kind+": "+err.Error())
		}
	}
	sort.Strings(reasons)
	c.reason = strings.Join(reasons, "; ")
	return c, true
}

// held reports whether c's kind is held, stood down or not checked yet:
// its sources do not run.
func (m *Manager) held(c *controller.Controller) bool {
	g := m.gateOf(c)
	return g != nil && g.reason() != nil
}

// admit decides whether the driver reg runs, before its controllers run:
// it compares its machine with the one recorded for the kind and, when
// they differ and the recorded one is not newer, checks the documents the
// store holds. It returns errHeld wrapping why the kind must not run,
// or another error when it could not tell (the store failed), to try
// again.
func (m *Manager) admit(ctx context.Context, reg registrant, r registry.Entry, log *zap.Logger) error {
	recorded, err := registry.Get(ctx, reg.Store(), r.Kind)
	switch {
	case errors.Is(err, registry.ErrUnregistered):
		return nil // nothing recorded: nothing to carry from
	case err != nil:
		return err
	case recorded.Digest == r.Digest:
		return nil
	case recorded.Machine.Version > r.Machine.Version:
		return &heldError{superseded(recorded, r)}
	}
	log.Info("the machine differs from the one recorded: checking the documents",
		zap.Int("recorded", recorded.Machine.Version), zap.Int("version", r.Machine.Version))
	err = reg.CheckCarried(ctx)
	if errors.Is(err, statemachine.ErrStranded) {
		return &heldError{err}
	}
	return err
}

// heldError says why a kind must not run.
type heldError struct{ err error }

func (e *heldError) Error() string { return e.err.Error() }
func (e *heldError) Unwrap() error { return e.err }

// superseded returns the error of a replica whose machine r is older than
// the recorded one.
func superseded(recorded, r registry.Entry) error {
	return fmt.Errorf("%w: %s: version %d of machine %s is recorded (by %s), this replica runs version %d",
		registry.ErrSuperseded, r.Kind, recorded.Machine.Version, recorded.Machine.Name, recorded.Replica, r.Machine.Version)
}
