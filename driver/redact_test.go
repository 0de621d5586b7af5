package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/history"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// secretSpec is a gateway spec holding a secret.
type secretSpec struct {
	State    gwState `json:"state"`
	Password string  `json:"password" tend:"sensitive"`
}

func (s secretSpec) Intent() gwState { return s.State }

const password = "s3cr3t-pa55"

// TestSecretsStayOut runs a gateway whose spec holds a password that a
// step quotes in its error, logs and panics with, and an observer quotes
// in its reason: the password appears in no log line, span, history entry,
// reconcile error or status the driver writes, and each of those shows
// where it was redacted.
func TestSecretsStayOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, err := memory.New(memory.Config{Kinds: append([]string{"ApiGateway"}, history.Kinds("ApiGateway")...)})
		if err != nil {
			t.Fatal(err)
		}
		coll, err := store.NewCollection[secretSpec, gwStatus](mem, "ApiGateway", store.CollectionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		steps := map[string]driver.StepFunc[secretSpec, gwStatus]{}
		for _, name := range slices.Concat(creatingSteps, startingSteps, stoppingSteps, deletingSteps) {
			steps[name] = func(ctx context.Context, obj *store.Object[secretSpec, gwStatus], _ string) (sm.Outcome, error) {
				if name != "create_deployment" {
					return sm.Done, nil
				}
				pw := obj.Spec.Password
				controller.LoggerFrom(ctx).Info("logging in with "+pw, zap.String("password", pw), zap.Any("spec", obj.Spec))
				controller.LoggerFrom(ctx).Named("sub-"+pw).Info("named", zap.String("user-"+pw, "x"), zap.Namespace("ns-"+pw),
					zap.Error(fmt.Errorf("wrapped: %w", errors.New(pw))))
				switch calls++; calls {
				case 1:
					return sm.Failed, fmt.Errorf("login with password %s refused", pw)
				case 2:
					panic("password " + pw + " rejected")
				}
				return sm.Done, nil
			}
		}
		observers := map[string]driver.ObserverFunc[secretSpec, gwStatus]{}
		for _, name := range []string{"namespace_ready", "database_ready", "runtime_domain_present", "deployment_available", "instance_present"} {
			observers[name] = func(ctx context.Context, obj *store.Object[secretSpec, gwStatus]) (bool, string, error) {
				return name != "instance_present", "checked with " + obj.Spec.Password, nil
			}
		}
		rec, stopRec := recording(t, mem, history.RecorderConfig{})
		defer stopRec()
		tp := &spanRecorder{}
		d, err := driver.New(coll, gatewayMachine(t), driver.Config[secretSpec, gwStatus]{
			Steps: steps, Observers: observers, History: rec, TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zapcore.DebugLevel)
		c, err := controller.New(controller.Config{Name: "gateways", Reconciler: d, Sources: []controller.Source{d.Source()},
			Logger: zap.New(core), TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := run(c, ctx)
		if _, err := d.Create(t.Context(), &store.Object[secretSpec, gwStatus]{Meta: store.Meta{Key: "gw"},
			Spec: secretSpec{State: gwRunning, Password: password}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		cancel()
		<-done
		stopRec()
		obj, err := coll.Get(t.Context(), "gw")
		if err != nil || obj.Status.Phase != phStarted || calls != 3 {
			t.Fatalf("phase %v after %d calls (%v), want Started after 3", obj.Status.Phase, calls, err)
		}

		outputs := map[string]string{} // where → what was written there
		var b strings.Builder
		for _, e := range logs.All() {
			fmt.Fprintf(&b, "%s %s %v %s %s\n", e.LoggerName, e.Message, e.ContextMap(), e.Stack, e.Caller.String())
		}
		outputs["logs"] = b.String()
		b.Reset()
		for _, s := range tp.all() {
			fmt.Fprintf(&b, "%s %v %s %v\n", s.Name, s.Attrs, s.Description, s.Events)
		}
		outputs["spans"] = b.String()
		entries, err := history.NewReader(mem).History(t.Context(), "ApiGateway", "gw")
		if err != nil {
			t.Fatal(err)
		}
		h, _ := json.Marshal(entries)
		outputs["history"] = string(h)
		doc, err := mem.Get(t.Context(), "ApiGateway", "gw")
		if err != nil {
			t.Fatal(err)
		}
		outputs["status"] = string(doc.Status)

		for where, text := range outputs {
			if strings.Contains(text, password) {
				t.Errorf("the password is in the %s:\n%s", where, text)
			}
		}
		for _, where := range []string{"logs", "spans", "history"} {
			if !strings.Contains(outputs[where], "[redacted]") {
				t.Errorf("nothing redacted in the %s: the test does not reach them", where)
			}
		}
		if !strings.Contains(outputs["logs"], "step panicked") || !strings.Contains(outputs["logs"], "logging in with [redacted]") {
			t.Errorf("the logs miss the step's own line or its panic:\n%s", outputs["logs"])
		}
	})
}
