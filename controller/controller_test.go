package controller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/internal/metrictest"
	"github.com/tendhq/tend/workqueue"
)

var errBoom = errors.New("boom")

// backoff1s retries after 1 s, 2 s, 4 s, ...: easy to read in fake time.
func backoff1s(t *testing.T) workqueue.RateLimiter[string] {
	t.Helper()
	l, err := workqueue.NewExponentialLimiter[string](workqueue.ExponentialConfig{Base: time.Second, Max: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestResults checks, for each kind of verdict a reconciler can return, when
// the key is reconciled again and what the metrics record. Time is fake, so
// the call times are exact.
func TestResults(t *testing.T) {
	type verdict func(ctx context.Context, call int) (controller.Result, error)
	tests := []struct {
		name    string
		timeout time.Duration
		verdict verdict
		// calls are the times of the reconciles within the first 10 s.
		calls   []time.Duration
		metrics map[string]float64 // by metric name; reconcile_total by result
	}{
		{
			name:    "done",
			verdict: func(context.Context, int) (controller.Result, error) { return controller.Result{}, nil },
			calls:   []time.Duration{0},
			metrics: map[string]float64{"success": 1, "error": 0, "errors_total": 0},
		},
		{
			name: "requeue after",
			verdict: func(context.Context, int) (controller.Result, error) {
				return controller.Result{RequeueAfter: 3 * time.Second}, nil
			},
			calls:   []time.Duration{0, 3 * time.Second, 6 * time.Second, 9 * time.Second},
			metrics: map[string]float64{"requeue_after": 4, "errors_total": 0},
		},
		{
			name:    "error backs off",
			verdict: func(context.Context, int) (controller.Result, error) { return controller.Result{}, errBoom },
			calls:   []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second},
			metrics: map[string]float64{"error": 4, "errors_total": 4, "terminal_total": 0},
		},
		{
			name: "errors then success stops retrying",
			verdict: func(_ context.Context, call int) (controller.Result, error) {
				if call < 2 {
					return controller.Result{}, errBoom
				}
				return controller.Result{}, nil
			},
			calls:   []time.Duration{0, 1 * time.Second, 3 * time.Second},
			metrics: map[string]float64{"error": 2, "success": 1, "errors_total": 2},
		},
		{
			name: "success resets the backoff",
			verdict: func(_ context.Context, call int) (controller.Result, error) {
				switch call {
				case 0, 1, 3:
					return controller.Result{}, errBoom
				case 2:
					return controller.Result{RequeueAfter: time.Second}, nil
				}
				return controller.Result{}, nil
			},
			// 0 fails, 1 s fails, 3 s requeues (backoff forgotten), 4 s
			// fails and waits the first delay again, 5 s succeeds.
			calls:   []time.Duration{0, 1 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second},
			metrics: map[string]float64{"error": 3, "requeue_after": 1, "success": 1},
		},
		{
			name: "error overrides requeue after",
			verdict: func(context.Context, int) (controller.Result, error) {
				return controller.Result{RequeueAfter: time.Hour}, errBoom
			},
			calls:   []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second},
			metrics: map[string]float64{"error": 4, "requeue_after": 0},
		},
		{
			name: "terminal is not retried",
			verdict: func(context.Context, int) (controller.Result, error) {
				return controller.Result{}, controller.Terminal(errBoom)
			},
			calls:   []time.Duration{0},
			metrics: map[string]float64{"error": 1, "errors_total": 1, "terminal_total": 1},
		},
		{
			name: "wrapped terminal is not retried",
			verdict: func(context.Context, int) (controller.Result, error) {
				return controller.Result{}, fmt.Errorf("creating: %w", controller.Terminal(errBoom))
			},
			calls:   []time.Duration{0},
			metrics: map[string]float64{"terminal_total": 1},
		},
		{
			name: "panic is recovered and retried",
			verdict: func(context.Context, int) (controller.Result, error) {
				panic("bad state")
			},
			calls:   []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second},
			metrics: map[string]float64{"error": 4, "errors_total": 4, "panics_total": 4},
		},
		{
			name:    "timeout cancels the reconcile and retries",
			timeout: 2 * time.Second,
			verdict: func(ctx context.Context, call int) (controller.Result, error) {
				if call > 0 {
					return controller.Result{}, nil
				}
				<-ctx.Done()
				return controller.Result{}, ctx.Err()
			},
			calls:   []time.Duration{0, 3 * time.Second},
			metrics: map[string]float64{"error": 1, "success": 1, "timeouts_total": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				start := time.Now()
				var calls []time.Duration
				c, err := controller.New(controller.Config{
					Name: "results",
					Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
						calls = append(calls, time.Since(start))
						return tt.verdict(ctx, len(calls)-1)
					}),
					Sources:           []controller.Source{controller.Channel(keys("a"))},
					RateLimiter:       backoff1s(t),
					Timeout:           tt.timeout,
					MetricsRegisterer: reg,
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := run(c, ctx)
				time.Sleep(10*time.Second - time.Nanosecond)
				synctest.Wait()
				got := slices.Clone(calls)
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Run: %v", err)
				}
				if !slices.Equal(got, tt.calls) {
					t.Errorf("reconciles at %v, want %v", got, tt.calls)
				}
				for name, want := range tt.metrics {
					metric, labels := "controller_runtime_reconcile_"+name, map[string]string{"controller": "results"}
					switch name {
					case "success", "error", "requeue_after":
						metric, labels["result"] = "controller_runtime_reconcile_total", name
					case "terminal_total":
						metric = "controller_runtime_terminal_reconcile_errors_total"
					}
					if got := metrictest.Value(t, reg, metric, labels); got != want {
						t.Errorf("%s%v = %v, want %v", metric, labels, got, want)
					}
				}
				if got, want := metrictest.Value(t, reg, "controller_runtime_reconcile_time_seconds", nil), float64(len(tt.calls)); got != want {
					t.Errorf("reconcile_time_seconds count = %v, want %v", got, want)
				}
			})
		})
	}
}

// keys returns a channel holding keys, closed.
func keys(keys ...string) <-chan string {
	ch := make(chan string, len(keys))
	for _, k := range keys {
		ch <- k
	}
	close(ch)
	return ch
}

// run starts c.Run(ctx) and returns its result channel.
func run(c *controller.Controller, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return done
}

// TestRequeueTiming checks that a key polled with RequeueAfter is
// reconciled at once when a source queues it meanwhile, and that its next
// poll is then counted from that reconcile, not from the first.
func TestRequeueTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex // guards calls
		var calls []time.Duration
		events := make(chan string)
		c, err := controller.New(controller.Config{
			Name: "poll",
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				mu.Lock()
				calls = append(calls, time.Since(start))
				mu.Unlock()
				return controller.Result{RequeueAfter: 10 * time.Second}, nil
			}),
			Sources: []controller.Source{controller.Channel(events)},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := run(c, ctx)
		events <- "a"                // reconciled at 0, due again at 10 s
		time.Sleep(4 * time.Second)  // 4 s
		events <- "a"                // reconciled at 4 s, due again at 14 s
		time.Sleep(15 * time.Second) // 19 s: reconciled at 14 s, due at 24 s
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{0, 4 * time.Second, 14 * time.Second}
		if !slices.Equal(calls, want) {
			t.Errorf("reconciles at %v, want %v", calls, want)
		}
	})
}

func TestTerminal(t *testing.T) {
	var custom *customError
	tests := []struct {
		name  string
		err   error
		cause error
	}{
		{"cause", controller.Terminal(errBoom), errBoom},
		{"wrapped", fmt.Errorf("ctx: %w", controller.Terminal(errBoom)), errBoom},
		{"struct cause", controller.Terminal(&customError{"x"}), nil},
		{"nil cause", controller.Terminal(nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, controller.ErrTerminal) {
				t.Errorf("errors.Is(%v, ErrTerminal) = false", tt.err)
			}
			if tt.cause != nil && !errors.Is(tt.err, tt.cause) {
				t.Errorf("errors.Is(%v, cause) = false", tt.err)
			}
			if tt.name == "struct cause" && !errors.As(tt.err, &custom) {
				t.Errorf("errors.As(%v, *customError) = false", tt.err)
			}
			if errors.Is(tt.err, errors.ErrUnsupported) {
				t.Errorf("%v matches an unrelated error", tt.err)
			}
		})
	}
	if errors.Is(errBoom, controller.ErrTerminal) {
		t.Error("a plain error matches ErrTerminal")
	}
}

type customError struct{ s string }

func (e *customError) Error() string { return e.s }

func TestNewValidates(t *testing.T) {
	rec := controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil })
	tests := []struct {
		name string
		cfg  controller.Config
		ok   bool
	}{
		{"minimal", controller.Config{Name: "x", Reconciler: rec}, true},
		{"no name", controller.Config{Reconciler: rec}, false},
		{"no reconciler", controller.Config{Name: "x"}, false},
		{"negative workers", controller.Config{Name: "x", Reconciler: rec, Workers: -1}, false},
		{"negative timeout", controller.Config{Name: "x", Reconciler: rec, Timeout: -1}, false},
		{"negative grace", controller.Config{Name: "x", Reconciler: rec, ShutdownGracePeriod: -1}, false},
		{"nil source", controller.Config{Name: "x", Reconciler: rec, Sources: []controller.Source{nil}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			_, err := controller.New(cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("New: %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok && !errors.Is(err, controller.ErrInvalidConfig) {
				t.Errorf("New: %v does not match ErrInvalidConfig", err)
			}
		})
	}
	reg := prometheus.NewRegistry()
	if _, err := controller.New(controller.Config{Name: "x", Reconciler: rec, MetricsRegisterer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.New(controller.Config{Name: "x", Reconciler: rec, MetricsRegisterer: reg}); err == nil {
		t.Error("a second controller of the same name registered its metrics")
	}
	if _, err := controller.New(controller.Config{Name: "y", Reconciler: rec, MetricsRegisterer: reg, Workers: 4}); err != nil {
		t.Fatalf("a second controller of another name: %v", err)
	}
	if got := metrictest.Value(t, reg, "controller_runtime_max_concurrent_reconciles", map[string]string{"controller": "y"}); got != 4 {
		t.Errorf("max_concurrent_reconciles = %v, want 4", got)
	}
}

// TestLogs checks that failures are logged once with the controller, key and
// reconcile id, that the reason a key was queued is logged at debug level,
// and that LoggerFrom hands the reconciler the same fields.
func TestLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.DebugLevel)
		var fromCtx *zap.Logger
		c, err := controller.New(controller.Config{
			Name: "logs",
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				fromCtx = controller.LoggerFrom(ctx)
				fromCtx.Info("inside")
				return controller.Result{}, controller.Terminal(errBoom)
			}),
			Sources: []controller.Source{controller.Channel(keys("a"))},
			Logger:  zap.New(core),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := run(c, ctx)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		queued := logs.FilterMessage("queued").All()
		if len(queued) != 1 || queued[0].ContextMap()["reason"] != "channel" || queued[0].Level != zapcore.DebugLevel {
			t.Errorf("queued logs = %v, want one debug entry with reason channel", queued)
		}
		failed := logs.FilterLevelExact(zapcore.ErrorLevel).All()
		if len(failed) != 1 {
			t.Fatalf("error logs = %v, want exactly one", failed)
		}
		f := failed[0].ContextMap()
		if f["controller"] != "logs" || f["key"] != "a" || f["reconcileID"] == "" || !strings.Contains(fmt.Sprint(f["error"]), "boom") {
			t.Errorf("error log fields = %v", f)
		}
		inside := logs.FilterMessage("inside").All()
		if len(inside) != 1 || inside[0].ContextMap()["reconcileID"] != f["reconcileID"] || inside[0].ContextMap()["key"] != "a" {
			t.Errorf("LoggerFrom log = %v, want the fields of the reconcile", inside)
		}
	})
	if l := controller.LoggerFrom(context.Background()); l == nil {
		t.Error("LoggerFrom outside a reconcile returned nil")
	}
}

// TestGracefulShutdown checks that stopping a controller lets the reconcile
// in flight finish with a live context, drops the keys still waiting, and
// returns only afterwards.
func TestGracefulShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex // guards reconciled
		var reconciled []string
		c, err := controller.New(controller.Config{
			Name: "drain",
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				time.Sleep(5 * time.Second)
				mu.Lock()
				defer mu.Unlock()
				reconciled = append(reconciled, fmt.Sprintf("%s ctx=%v", key, ctx.Err()))
				return controller.Result{}, nil
			}),
			Sources:             []controller.Source{controller.Channel(keys("a", "b", "c"))},
			ShutdownGracePeriod: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := run(c, ctx)
		time.Sleep(time.Second) // "a" is in flight, "b" and "c" wait
		cancel()
		start := time.Now()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 4*time.Second {
			t.Errorf("Run returned %v after the stop, want 4s (the rest of the reconcile in flight)", waited)
		}
		if want := []string{"a ctx=<nil>"}; !slices.Equal(reconciled, want) {
			t.Errorf("reconciled %v, want %v", reconciled, want)
		}
	})
}

// TestShutdownGracePeriodOver checks that a reconcile still running when the
// grace period ends has its context cancelled and Run returns.
func TestShutdownGracePeriodOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cause error
		c, err := controller.New(controller.Config{
			Name: "stuck",
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				<-ctx.Done()
				cause = context.Cause(ctx)
				return controller.Result{}, ctx.Err()
			}),
			Sources:             []controller.Source{controller.Channel(keys("a"))},
			ShutdownGracePeriod: 3 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := run(c, ctx)
		synctest.Wait()
		cancel()
		start := time.Now()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("Run returned %v after the stop, want the 3s grace period", waited)
		}
		if cause == nil {
			t.Error("the stuck reconcile's context was never cancelled")
		}
	})
}

// TestWorkers checks that Workers reconciles run at once, never two of one
// key, and that active_workers follows them.
func TestWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		var mu sync.Mutex // guards active, peak, inKey
		active, peak := 0, 0
		inKey := map[string]bool{}
		events := make(chan string)
		c, err := controller.New(controller.Config{
			Name: "pool",
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				mu.Lock()
				if inKey[key] {
					t.Errorf("key %s reconciled twice at once", key)
				}
				inKey[key] = true
				active++
				peak = max(peak, active)
				mu.Unlock()
				time.Sleep(time.Second)
				mu.Lock()
				inKey[key] = false
				active--
				mu.Unlock()
				return controller.Result{}, nil
			}),
			Sources:           []controller.Source{controller.Channel(events)},
			Workers:           3,
			MetricsRegisterer: reg,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := run(c, ctx)
		for i := range 20 {
			events <- fmt.Sprint("k", i%5)
		}
		synctest.Wait()
		if got := metrictest.Value(t, reg, "controller_runtime_active_workers", map[string]string{"controller": "pool"}); got != 3 {
			t.Errorf("active_workers = %v while busy, want 3", got)
		}
		time.Sleep(time.Minute)
		if got := metrictest.Value(t, reg, "controller_runtime_active_workers", map[string]string{"controller": "pool"}); got != 0 {
			t.Errorf("active_workers = %v when idle, want 0", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if peak != 3 {
			t.Errorf("peak concurrency %d, want 3", peak)
		}
	})
}

// TestRunErrors checks that a failing source stops Run with its error, and
// that Run refuses to run twice at once.
func TestRunErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errSource := errors.New("source broke")
		rec := controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil })
		c, err := controller.New(controller.Config{
			Name:       "failing",
			Reconciler: rec,
			Sources: []controller.Source{
				controller.Channel(make(chan string)),
				controller.SourceFunc(func(ctx context.Context, e controller.Enqueuer) error {
					time.Sleep(time.Second)
					return errSource
				}),
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		done := run(c, t.Context())
		synctest.Wait()
		if err := c.Run(t.Context()); !errors.Is(err, controller.ErrAlreadyRunning) {
			t.Errorf("second Run: %v, want ErrAlreadyRunning", err)
		}
		if err := <-done; !errors.Is(err, errSource) {
			t.Errorf("Run: %v, want the source's error", err)
		}
		// Run can start again once it returned.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := c.Run(ctx); !errors.Is(err, errSource) && err != nil {
			t.Errorf("Run after Run: %v", err)
		}
	})
}
