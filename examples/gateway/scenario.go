package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/registry"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/console"
	"github.com/tendhq/tend/examples/gateway/platform"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/history/historyprom"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// options are the scenario's knobs (the command's flags).
type options struct {
	Gateways    int
	FailureRate float64
	Delay       time.Duration // resource readiness and deletion delay
	Latency     time.Duration // latency of every infrastructure call
	Seed        uint64
	Timeout     time.Duration
	// MaxBackoff caps the delay before a failed step is retried; zero
	// means backoffPolls polls.
	MaxBackoff time.Duration
	Refresh    time.Duration // how often the table is drawn; zero draws only at the end
	TTY        bool          // redraw the table in place
	Registerer prometheus.Registerer
	// TracerProvider receives the spans of the controllers and drivers.
	TracerProvider trace.TracerProvider
	// Listener, when set, serves the manager's probes, Gatherer's metrics
	// and every document's history while the scenario runs (-listen).
	Listener net.Listener
	Gatherer prometheus.Gatherer
	// ConsoleActions lets the web console the Listener serves under
	// /console/ act on documents (-console-actions); without it the
	// console is read-only.
	ConsoleActions bool
	// Token, when set with a Listener, serves the on-call API under
	// /oncall/ to the holders of this bearer token, for tend --server
	// ($TEND_TOKEN).
	Token string
	// Stay keeps the controllers running and the Listener serving after
	// the scenario, until ctx is done (-stay): time to look around the
	// console, and to act there with ConsoleActions.
	Stay bool
	// Kubeconfig, when set, runs the cluster on the Kubernetes cluster it
	// names instead of the simulation; the databases stay simulated. Every
	// gateway is deleted at the end, so that the run leaves nothing behind.
	Kubeconfig string
	// AuditLog is the cluster's audit log, on which the ordering rules are
	// checked; without it they are not checked on a cluster.
	AuditLog string
}

// report is what a scenario run ends with.
type report struct {
	Settled        int           // documents settled at the end (gateways and runtime domains)
	Removed        int           // gateways removed by their cascade
	Documents      int           // documents left in the store
	Steps          int64         // step runs
	Retried        int64         // failed step runs, each retried
	Probes         int64         // probe runs (observations of conditions)
	ProbesFailed   int64         // failed probe runs, each run again after the poll interval
	Injected       int           // failures the simulated infrastructure injected
	Writes         int64         // store writes
	Elapsed        time.Duration // from the first create to convergence
	StartedAfter   time.Duration // from the first create until every gateway was Started
	Breakdown      breakdown     // where the time went
	Violations     []error       // broken invariants
	Converged      bool
	OrderOps       int  // operations the ordering rules were checked on
	OrderUnchecked bool // the ordering rules could not be checked (a cluster without an audit log)
}

// intents says what the script asks of each gateway: index 1 is stopped,
// index 2 restarted, indexes 3 and 4 deleted, the others keep running.
func intents(n int) []platform.GatewayState {
	out := make([]platform.GatewayState, n)
	for i := range out {
		switch i {
		case 1:
			out[i] = platform.Stopped
		case 2:
			out[i] = platform.Restarting
		case 3, 4:
			out[i] = platform.Deleted
		default:
			out[i] = platform.Running
		}
	}
	return out
}

// run plays the scenario on the memory store and the world opts ask for (the
// simulated infrastructure by default) and draws its progress to out.
func run(ctx context.Context, opts options, out io.Writer) (report, error) {
	if opts.Gateways < 1 {
		return report{}, fmt.Errorf("need at least one gateway, not %d", opts.Gateways)
	}
	kinds := slices.Concat(platform.Kinds(), history.Kinds(platform.Kinds()...), registry.Kinds())
	st, err := memory.New(memory.Config{Kinds: kinds})
	if err != nil {
		return report{}, err
	}
	var rec *history.Recorder // nil: no history
	var con *console.Console
	if opts.Listener != nil {
		if rec, err = history.NewRecorder(st, history.RecorderConfig{Metrics: historyMetrics(opts.Registerer)}); err != nil {
			return report{}, err
		}
		if con, err = newConsole(st, opts.ConsoleActions); err != nil {
			return report{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	w, err := newWorld(ctx, opts)
	if err != nil {
		return report{}, err
	}
	pc := platformConfig(opts, st, w)
	pc.Manager.History = rec
	p, err := platform.New(pc)
	if err != nil {
		return report{}, err
	}
	if opts.Registerer != nil {
		if err := registerStoreMetrics(opts.Registerer, st); err != nil {
			return report{}, err
		}
	}
	gm, err := platform.GatewayMachine()
	if err != nil {
		return report{}, err
	}
	dm, err := platform.DomainMachine()
	if err != nil {
		return report{}, err
	}

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = p.Run(runCtx) })
	var opsErr error
	if opts.Listener != nil {
		fallback, err := withOncall(st, opts.Token, con)
		if err != nil {
			stop()
			wg.Wait()
			return report{}, err
		}
		hc := manager.HandlerConfig{Gatherer: opts.Gatherer, History: history.NewReader(st), Fallback: fallback}
		wg.Go(func() { opsErr = p.Manager().ServeListener(runCtx, opts.Listener, hc) })
		fmt.Fprintf(out, "serving probes, metrics and history on http://%s (/readyz, /healthz, /metrics, /history/%s/%s)\n",
			opts.Listener.Addr(), platform.KindApiGateway, w.gatewayID(0))
		fmt.Fprintf(out, "the console: http://%s/console/\n", opts.Listener.Addr())
		if opts.Token != "" {
			fmt.Fprintf(out, "the on-call API, for $TEND_TOKEN's holders: tend --server http://%s/oncall/ get\n", opts.Listener.Addr())
		}
	}
	inv := &invariants{p: p, w: w}
	wg.Go(func() { inv.watch(runCtx, p.Collections().Gateways) })
	tl := newTimeline()
	var tlErr error
	wg.Go(func() { tlErr = tl.watch(runCtx, p, gm, dm) })
	d := &display{p: p, w: w, gm: gm, out: out, tty: opts.TTY, start: time.Now()}
	if opts.Refresh > 0 {
		wg.Go(func() { d.loop(runCtx, opts.Refresh) })
	}

	teardown := w.kube != nil
	rep, err := script(ctx, p, w, gm, dm, d, opts.Gateways, teardown)
	elapsed := time.Since(d.start)
	if opts.Stay && opts.Listener != nil && err == nil {
		d.say("scenario done: the controllers keep running and http://%s/console/ serves until interrupted (Ctrl-C)", opts.Listener.Addr())
		<-ctx.Done()
	}
	stop()
	wg.Wait()
	d.draw(context.Background(), "final")
	rep.Elapsed = elapsed // the scenario's time, not the time spent staying
	rep.Breakdown = tl.breakdown(d.start.Add(elapsed))
	runErr = errors.Join(runErr, tlErr, opsErr)
	stats := p.Stats()
	rep.Steps, rep.Retried, rep.Injected = stats.Steps, stats.Retried, w.sim.Stats().Failures
	rep.Probes, rep.ProbesFailed = stats.Probes, stats.ProbesFailed
	rep.Writes = revision(st)
	rep.Documents = countDocuments(st)
	rep.Violations = append(rep.Violations, inv.errors()...)
	// After the run: its context may be over.
	after, cancelAfter := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancelAfter()
	switch ops, ok, opsErr := w.ops(after, opts.Gateways); {
	case opsErr != nil:
		return rep, errors.Join(err, runErr, opsErr)
	case !ok:
		rep.OrderUnchecked = true
	default:
		rep.OrderOps = len(ops)
		if err := platform.CheckOrder(ops); err != nil {
			rep.Violations = append(rep.Violations, err)
		}
	}
	if rep.Converged {
		resources, resErr := w.resources(after)
		if resErr != nil {
			return rep, errors.Join(err, runErr, resErr)
		}
		for i, want := range intents(opts.Gateways) {
			if want != platform.Deleted && !teardown {
				continue
			}
			left, err := p.Leftovers(after, w.gatewayID(i), resources, w.sim.DatabaseNames())
			if err != nil {
				return rep, err
			}
			if len(left) > 0 {
				rep.Violations = append(rep.Violations, fmt.Errorf("%s was deleted but %v remain", w.gatewayID(i), left))
			}
		}
	}
	return rep, errors.Join(err, runErr)
}

// backoffPolls is how many polls a failed step waits at most before its
// retry: the cap of its backoff, which doubles from 5 ms up to it.
//
// The failures this demo injects are independent: a call that failed says
// nothing of the next one, so a run of failed attempts is chance, not an
// outage the backoff should spare. Yet at a high failure rate such runs are
// long (a step that makes five calls fails two attempts in three), and each
// attempt past the cap waits the whole cap. With the platform's default of
// 2 s, that wait was nearly all of the slowest runs' time (README.md, "Where
// the time goes"); ten polls, 500 ms by default, still space the retries out
// a hundredfold from the first one.
const backoffPolls = 10

// platformConfig configures the platform of a run on st and w. It looks
// again at what it waits for on the scale of the simulated cluster's delay,
// or at a pace an API server bears, and caps its backoff at opts.MaxBackoff,
// by default backoffPolls polls.
func platformConfig(opts options, st store.Backend, w *world) platform.Config {
	poll := min(max(opts.Delay/4, 5*time.Millisecond), 50*time.Millisecond)
	if w.kube != nil {
		poll = 100 * time.Millisecond // each look is a request to the API server
	}
	return platform.Config{Store: st, Cluster: w.cluster, Databases: w.sim, Poll: poll,
		MaxBackoff: cmp.Or(opts.MaxBackoff, backoffPolls*poll),
		Manager:    manager.Config{MetricsRegisterer: opts.Registerer, TracerProvider: opts.TracerProvider}}
}

// script creates the gateways, starts them, stops one, restarts one and
// deletes two, then waits until every document has settled; with teardown
// it then deletes every gateway and waits until all are gone.
func script(ctx context.Context, p *platform.Platform, w *world, gm *sm.Machine[platform.GatewayState, platform.GatewayPhase],
	dm *sm.Machine[platform.DomainState, platform.DomainPhase], d *display, n int, teardown bool) (report, error) {
	var rep report
	want := intents(n)
	gatewayID := w.gatewayID
	gws := make([]*platform.Gateway, n)
	for i := range n {
		spec := platform.GatewaySpec{State: platform.Running, Image: "imprun/runtime:1.4"}
		if i%2 == 0 {
			spec.CustomDomain = gatewayID(i) + ".api.example.com"
		}
		gw, err := p.CreateGateway(ctx, gatewayID(i), spec)
		if err != nil {
			return rep, err
		}
		gws[i] = gw
		for j := range 2 {
			if err := p.AddCloudFunction(ctx, gw, fmt.Sprintf("fn-%d", j), platform.CloudFunctionSpec{Runtime: "node20"}); err != nil {
				return rep, err
			}
		}
		if err := p.AddCronTrigger(ctx, gw, "nightly", platform.CronTriggerSpec{Function: "fn-0", Schedule: "0 3 * * *"}); err != nil {
			return rep, err
		}
	}
	d.say("created %d gateways, each with 2 cloud functions and a cron trigger", n)

	all := func(platform.GatewayState) platform.GatewayState { return platform.Running }
	if err := converge(ctx, p, w, gm, dm, n, all); err != nil {
		return rep, fmt.Errorf("starting the gateways: %w", err)
	}
	for _, gw := range gws {
		for _, stage := range platform.Stages[:2] {
			if err := p.AddClientApp(ctx, gw, stage, "web", platform.ClientAppSpec{Name: "web"}); err != nil {
				return rep, err
			}
		}
	}
	rep.StartedAfter = time.Since(d.start)
	d.say("all %d gateways Started; added client apps", n)

	for i, s := range want {
		if s == platform.Running {
			continue
		}
		if _, err := p.SetGatewayState(ctx, gatewayID(i), s); err != nil {
			return rep, err
		}
		d.say("%s: State = %s", gatewayID(i), s)
	}
	// A change of intent once Deleting has begun is refused, naming the phase.
	if i := slices.Index(want, platform.Deleted); i >= 0 {
		if err := refuseWhileDeleting(ctx, p, gatewayID(i), d); err != nil {
			return rep, err
		}
	}
	if err := converge(ctx, p, w, gm, dm, n, func(platform.GatewayState) platform.GatewayState { return "" }); err != nil {
		return rep, fmt.Errorf("converging: %w", err)
	}
	d.say("converged")
	for _, s := range want {
		if s == platform.Deleted {
			rep.Removed++
		}
	}
	rep.Settled, _ = settledCount(ctx, p, gm, dm)
	if teardown {
		for i, s := range want {
			if s == platform.Deleted {
				continue
			}
			if _, err := p.SetGatewayState(ctx, gatewayID(i), platform.Deleted); err != nil {
				return rep, err
			}
			rep.Removed++
		}
		d.say("teardown: State = Deleted for every gateway left")
		if err := converge(ctx, p, w, gm, dm, n, func(platform.GatewayState) platform.GatewayState { return platform.Deleted }); err != nil {
			return rep, fmt.Errorf("tearing down: %w", err)
		}
		d.say("every gateway removed")
	}
	rep.Converged = true
	return rep, nil
}

// refuseWhileDeleting waits until gateway id is Deleting, then asks for it to
// run again: the platform must refuse.
func refuseWhileDeleting(ctx context.Context, p *platform.Platform, id string, d *display) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		gw, err := p.Collections().Gateways.Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // already gone
		}
		if err != nil {
			return err
		}
		if gw.Status.Phase == platform.GatewayDeleting {
			_, err := p.SetGatewayState(ctx, id, platform.Running)
			if !errors.Is(err, sm.ErrIntentRefused) {
				return fmt.Errorf("%s: Running while Deleting was not refused (error %v)", id, err)
			}
			d.say("refused: %v", err)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// converge waits until every gateway i has settled: in its intent, or in
// override(intent) when that is not empty; a Deleted gateway must be gone.
// Runtime domains must have settled too.
func converge(ctx context.Context, p *platform.Platform, w *world, gm *sm.Machine[platform.GatewayState, platform.GatewayPhase],
	dm *sm.Machine[platform.DomainState, platform.DomainPhase], n int, override func(platform.GatewayState) platform.GatewayState) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := converged(ctx, p, w, gm, dm, n, override)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func converged(ctx context.Context, p *platform.Platform, w *world, gm *sm.Machine[platform.GatewayState, platform.GatewayPhase],
	dm *sm.Machine[platform.DomainState, platform.DomainPhase], n int, override func(platform.GatewayState) platform.GatewayState) (bool, error) {
	docs := p.Collections()
	for i := range n {
		gw, err := docs.Gateways.Get(ctx, w.gatewayID(i))
		if errors.Is(err, store.ErrNotFound) {
			continue // removed: its cascade finished
		}
		if err != nil {
			return false, err
		}
		intent := gw.Spec.State
		if o := override(intent); o != "" {
			intent = o
		}
		if intent == platform.Deleted {
			return false, nil // still there
		}
		if gw.Status.Phase == "" {
			return false, nil // not acted on yet
		}
		if d, err := gm.Decide(intent, gw.Status.Status, time.Now()); err != nil || d.Action != sm.Nothing || gw.Spec.State != intent {
			return false, err
		}
	}
	domains, _, err := docs.Domains.List(ctx, store.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, d := range domains {
		if d.Status.Phase == "" {
			return false, nil
		}
		if dec, err := dm.Decide(d.Spec.State, d.Status.Status, time.Now()); err != nil || dec.Action != sm.Nothing || d.Terminating() {
			return false, err
		}
	}
	return true, nil
}

// settledCount counts the gateways and runtime domains whose pair is settled.
func settledCount(ctx context.Context, p *platform.Platform, gm *sm.Machine[platform.GatewayState, platform.GatewayPhase],
	dm *sm.Machine[platform.DomainState, platform.DomainPhase]) (int, error) {
	docs := p.Collections()
	gws, _, err := docs.Gateways.List(ctx, store.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, gw := range gws {
		if d, err := gm.Decide(gw.Spec.State, gw.Status.Status, time.Now()); err == nil && d.Action == sm.Nothing {
			n++
		}
	}
	domains, _, err := docs.Domains.List(ctx, store.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, d := range domains {
		if dec, err := dm.Decide(d.Spec.State, d.Status.Status, time.Now()); err == nil && dec.Action == sm.Nothing {
			n++
		}
	}
	return n, nil
}

// invariants watches the gateways: a gateway that entered Deleting never
// shows another phase but Deleted, and nothing it owned remains when its
// document is removed.
type invariants struct {
	p *platform.Platform
	w *world

	mu         sync.Mutex // guards violations
	violations []error
}

func (v *invariants) fail(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.violations = append(v.violations, err)
}

func (v *invariants) errors() []error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.violations)
}

func (v *invariants) watch(ctx context.Context, c *store.Collection[platform.GatewaySpec, platform.GatewayStatus]) {
	w, err := c.Watch(ctx, 0)
	if err != nil {
		v.fail(err)
		return
	}
	defer w.Close()
	last := map[string]platform.GatewayPhase{}
	for {
		e, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				v.fail(fmt.Errorf("watching gateways: %w", err))
			}
			return
		}
		key, ph := e.Object.Key, e.Object.Status.Phase
		if e.Type == store.Deleted {
			resources, err := v.w.resources(ctx)
			var left []string
			if err == nil {
				left, err = v.p.Leftovers(ctx, key, resources, v.w.sim.DatabaseNames())
			}
			switch {
			case err != nil && ctx.Err() == nil:
				v.fail(err)
			case len(left) > 0:
				v.fail(fmt.Errorf("%s removed while %v remain", key, left))
			}
			delete(last, key)
			continue
		}
		if last[key] == platform.GatewayDeleting && ph != platform.GatewayDeleting && ph != platform.GatewayDeleted {
			v.fail(fmt.Errorf("%s went back from Deleting to %s", key, ph))
		}
		if ph != "" {
			last[key] = ph
		}
	}
}

// newConsole returns the web console of st, served under /console/: it
// acts on documents, as the demo's operator, only when actions is set.
func newConsole(st store.Backend, actions bool) (*console.Console, error) {
	cfg := console.Config{Store: st, Prefix: "/console/", Actor: func(*http.Request) string { return "demo-operator" }}
	if actions {
		cfg.Authorize = func(*http.Request, console.Action) error { return nil }
	}
	return console.New(cfg)
}

// revision is the store's revision: one per write since it started.
func revision(b store.Backend) int64 {
	res, err := b.List(context.Background(), platform.KindApiGateway, store.ListOptions{})
	if err != nil {
		return 0
	}
	return res.Revision
}

func countDocuments(b store.Backend) int {
	n := 0
	for _, kind := range platform.Kinds() {
		res, err := b.List(context.Background(), kind, store.ListOptions{})
		if err == nil {
			n += len(res.Items)
		}
	}
	return n
}

// registerStoreMetrics exports the number of stored documents per kind and
// the store's revision.
func registerStoreMetrics(reg prometheus.Registerer, b store.Backend) error {
	for _, kind := range platform.Kinds() {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tend_store_documents", Help: "Documents stored, per kind.",
			ConstLabels: prometheus.Labels{"kind": kind}}, func() float64 {
			res, err := b.List(context.Background(), kind, store.ListOptions{})
			if err != nil {
				return 0
			}
			return float64(len(res.Items))
		})
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tend_store_revision",
		Help: "The store's revision: one per write."}, func() float64 { return float64(revision(b)) }))
}

// historyMetrics returns the metrics of a history recorder registered with
// reg, or none when reg is nil.
func historyMetrics(reg prometheus.Registerer) history.MetricsProvider {
	if reg == nil {
		return nil
	}
	return historyprom.New(historyprom.Config{Registerer: reg})
}
