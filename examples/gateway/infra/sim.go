package infra

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// SimConfig configures a [Sim]. The zero value is a cluster where everything
// happens at once and nothing fails.
type SimConfig struct {
	// ReadyDelay is how long an applied resource takes to become ready (a
	// Deployment's first available replica, a Certificate's issue). Zero means
	// at once.
	ReadyDelay time.Duration
	// DeleteDelay is how long a deleted resource stays Terminating before it is
	// gone (pods shutting down, finalizers). Zero means at once.
	DeleteDelay time.Duration
	// Latency is how long every call takes. Zero means none.
	Latency time.Duration
	// FailureRate is the probability, from 0 to 1, that a call fails with
	// [ErrInjected]: half of such failures happen before the call acts, half
	// after it (its change is made but the caller sees an error). Zero means
	// no failures.
	FailureRate float64
	// Seed seeds the failure generator, so a single-threaded run injects the
	// same failures every time.
	Seed uint64
	// Now is the clock readiness and deletion delays are measured with. Nil
	// means time.Now (which testing/synctest fakes).
	Now func() time.Time
}

// OpType is what an [Op] did.
type OpType string

// The operations Sim records.
const (
	OpApply          OpType = "apply"           // a resource created or updated
	OpDelete         OpType = "delete"          // deletion requested (Terminating)
	OpGone           OpType = "gone"            // a Terminating resource disappeared
	OpCreateDatabase OpType = "create-database" // a database and its user created
	OpDropDatabase   OpType = "drop-database"   // a database and its user dropped
)

// Op is one change Sim made, in the order it made them.
type Op struct {
	// Seq numbers the operations from 1.
	Seq  int
	Type OpType
	// Ref names the resource (cluster operations).
	Ref Ref
	// Database names the database (database operations).
	Database string
	// Labels are the resource's labels when the operation happened.
	Labels map[string]string
	Time   time.Time
}

// String formats the op for logs and test failures.
func (o Op) String() string {
	if o.Database != "" {
		return fmt.Sprintf("#%d %s %s", o.Seq, o.Type, o.Database)
	}
	return fmt.Sprintf("#%d %s %v", o.Seq, o.Type, o.Ref)
}

// Sim is the simulated infrastructure: a [Cluster] and a [Databases] server in
// memory, with delays, latency and injected failures (see the package
// documentation). It is safe for concurrent use. Create it with [NewSim].
type Sim struct {
	cfg SimConfig

	mu        sync.Mutex // guards everything below
	rng       *rand.Rand
	resources map[Ref]*simResource
	databases map[string]Database
	ops       []Op
	calls     int
	failures  int
}

type simResource struct {
	res       Resource
	readyAt   time.Time
	deletedAt time.Time // zero unless Terminating
}

var (
	_ Cluster   = (*Sim)(nil)
	_ Databases = (*Sim)(nil)
)

// NewSim returns an empty simulated infrastructure. It fails with an error
// matching [ErrInvalid] when a delay is negative or FailureRate is outside
// [0, 1].
func NewSim(cfg SimConfig) (*Sim, error) {
	switch {
	case cfg.ReadyDelay < 0, cfg.DeleteDelay < 0, cfg.Latency < 0:
		return nil, fmt.Errorf("%w: negative delay or latency", ErrInvalid)
	case cfg.FailureRate < 0 || cfg.FailureRate > 1:
		return nil, fmt.Errorf("%w: FailureRate %v is outside [0, 1]", ErrInvalid, cfg.FailureRate)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sim{
		cfg:       cfg,
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		resources: make(map[Ref]*simResource),
		databases: make(map[string]Database),
	}, nil
}

// SetFailureRate changes the failure rate from now on (a scenario injects
// failures for a while). Values outside [0, 1] are clamped.
func (s *Sim) SetFailureRate(rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.FailureRate = min(max(rate, 0), 1)
}

// failure says when the current call fails.
type failure int

const (
	noFailure failure = iota
	failBefore
	failAfter
)

// begin waits out the latency, then takes the lock, makes due disappearances
// happen and draws the call's failure. The caller unlocks.
func (s *Sim) begin(ctx context.Context) (failure, error) {
	if s.cfg.Latency > 0 {
		t := time.NewTimer(s.cfg.Latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return noFailure, ctx.Err()
		case <-t.C:
		}
	} else if err := ctx.Err(); err != nil {
		return noFailure, err
	}
	s.mu.Lock()
	s.sweep(s.cfg.Now())
	s.calls++
	if s.cfg.FailureRate > 0 && s.rng.Float64() < s.cfg.FailureRate {
		s.failures++
		if s.rng.IntN(2) == 0 {
			return failBefore, nil
		}
		return failAfter, nil
	}
	return noFailure, nil
}

func injected(op string, what any) error {
	return fmt.Errorf("%w: %s %v", ErrInjected, op, what)
}

// sweep removes the Terminating resources whose delay is over, in the order
// they became due, and logs them as gone.
func (s *Sim) sweep(now time.Time) {
	var due []Ref
	for ref, r := range s.resources {
		if !r.deletedAt.IsZero() && !now.Before(r.deletedAt.Add(s.cfg.DeleteDelay)) {
			due = append(due, ref)
		}
	}
	slices.SortFunc(due, func(a, b Ref) int {
		return cmp.Or(s.resources[a].deletedAt.Compare(s.resources[b].deletedAt), cmp.Compare(a.String(), b.String()))
	})
	for _, ref := range due {
		r := s.resources[ref]
		delete(s.resources, ref)
		s.log(Op{Type: OpGone, Ref: ref, Labels: r.res.Labels, Time: now})
	}
}

func (s *Sim) log(op Op) {
	op.Seq = len(s.ops) + 1
	s.ops = append(s.ops, op)
}

// Apply implements [Cluster].
func (s *Sim) Apply(ctx context.Context, r Resource) error {
	if err := r.validate(); err != nil {
		return err
	}
	f, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	if f == failBefore {
		return injected("apply", r.Ref)
	}
	if r.Kind.Namespaced() {
		ns, ok := s.resources[Ref{Kind: Namespace, Name: r.Namespace}]
		switch {
		case !ok:
			return fmt.Errorf("%w: apply %v: namespace %s", ErrNotFound, r.Ref, r.Namespace)
		case !ns.deletedAt.IsZero():
			return fmt.Errorf("%w: apply %v: namespace %s", ErrTerminating, r.Ref, r.Namespace)
		}
	}
	now := s.cfg.Now()
	cur, ok := s.resources[r.Ref]
	switch {
	case ok && !cur.deletedAt.IsZero():
		return fmt.Errorf("%w: apply %v", ErrTerminating, r.Ref)
	case ok:
		cur.res = r.clone()
	default:
		s.resources[r.Ref] = &simResource{res: r.clone(), readyAt: now.Add(s.cfg.ReadyDelay)}
	}
	s.log(Op{Type: OpApply, Ref: r.Ref, Labels: r.clone().Labels, Time: now})
	if f == failAfter {
		return injected("apply", r.Ref)
	}
	return nil
}

// Delete implements [Cluster].
func (s *Sim) Delete(ctx context.Context, ref Ref) error {
	if err := ref.validate(); err != nil {
		return err
	}
	f, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	if f == failBefore {
		return injected("delete", ref)
	}
	if cur, ok := s.resources[ref]; ok && cur.deletedAt.IsZero() {
		now := s.cfg.Now()
		cur.deletedAt = now
		s.log(Op{Type: OpDelete, Ref: ref, Labels: cur.res.clone().Labels, Time: now})
		s.sweep(now)
	}
	if f == failAfter {
		return injected("delete", ref)
	}
	return nil
}

// Get implements [Cluster].
func (s *Sim) Get(ctx context.Context, ref Ref) (Observed, error) {
	if err := ref.validate(); err != nil {
		return Observed{}, err
	}
	f, err := s.begin(ctx)
	if err != nil {
		return Observed{}, err
	}
	defer s.mu.Unlock()
	if f != noFailure {
		return Observed{}, injected("get", ref)
	}
	cur, ok := s.resources[ref]
	if !ok {
		return Observed{}, fmt.Errorf("%w: %v", ErrNotFound, ref)
	}
	return s.observe(cur, s.cfg.Now()), nil
}

func (s *Sim) observe(r *simResource, now time.Time) Observed {
	terminating := !r.deletedAt.IsZero()
	return Observed{Resource: r.res.clone(), Ready: !terminating && !now.Before(r.readyAt), Terminating: terminating}
}

// EnsureDatabase implements [Databases].
func (s *Sim) EnsureDatabase(ctx context.Context, db Database) error {
	if db.Name == "" || db.User == "" {
		return fmt.Errorf("%w: database %+v: name and user are required", ErrInvalid, db)
	}
	f, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	if f == failBefore {
		return injected("create database", db.Name)
	}
	if _, ok := s.databases[db.Name]; !ok {
		s.databases[db.Name] = db
		s.log(Op{Type: OpCreateDatabase, Database: db.Name, Time: s.cfg.Now()})
	}
	if f == failAfter {
		return injected("create database", db.Name)
	}
	return nil
}

// DropDatabase implements [Databases].
func (s *Sim) DropDatabase(ctx context.Context, db Database) error {
	f, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	if f == failBefore {
		return injected("drop database", db.Name)
	}
	if _, ok := s.databases[db.Name]; ok {
		delete(s.databases, db.Name)
		s.log(Op{Type: OpDropDatabase, Database: db.Name, Time: s.cfg.Now()})
	}
	if f == failAfter {
		return injected("drop database", db.Name)
	}
	return nil
}

// DatabaseExists implements [Databases].
func (s *Sim) DatabaseExists(ctx context.Context, db Database) (bool, error) {
	f, err := s.begin(ctx)
	if err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	if f != noFailure {
		return false, injected("look up database", db.Name)
	}
	_, ok := s.databases[db.Name]
	return ok, nil
}

// Ops returns a copy of the operation log.
func (s *Sim) Ops() []Op {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Op, len(s.ops))
	for i, op := range s.ops {
		op.Labels = Resource{Labels: op.Labels}.clone().Labels
		out[i] = op
	}
	return out
}

// Resources returns every resource that exists now (Terminating ones
// included), ordered by ref.
func (s *Sim) Resources() []Observed {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	s.sweep(now)
	out := make([]Observed, 0, len(s.resources))
	for _, r := range s.resources {
		out = append(out, s.observe(r, now))
	}
	slices.SortFunc(out, func(a, b Observed) int { return cmp.Compare(a.Ref.String(), b.Ref.String()) })
	return out
}

// DatabaseNames returns the databases that exist now, sorted.
func (s *Sim) DatabaseNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.databases))
	for name := range s.databases {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// SimStats counts the calls Sim served.
type SimStats struct {
	// Calls counts every call that got past its latency.
	Calls int
	// Failures counts the calls that failed with [ErrInjected].
	Failures int
}

// Stats returns the call counts so far.
func (s *Sim) Stats() SimStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SimStats{Calls: s.calls, Failures: s.failures}
}
