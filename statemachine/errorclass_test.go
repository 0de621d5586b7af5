package statemachine_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tendhq/tend/statemachine"
)

var (
	errInvalid = errors.New("invalid argument")
	errQuota   = errors.New("quota exceeded")
)

// A machine declares classes of step errors: an invalid argument is final
// wherever it happens; a quota exceeded while creating the database is
// retried after a minute, then every five; a network error is only named.
func ExampleErrorClass() {
	def := gateway()
	def.Errors = []statemachine.ErrorClass{
		{Name: "invalid", Match: statemachine.ErrorIs(errInvalid), Final: true},
		{Name: "quota", Steps: []string{"create_database"}, Match: statemachine.ErrorIs(errQuota),
			Retry: []time.Duration{time.Minute, 5 * time.Minute}},
		{Name: "network", Match: statemachine.ErrorAs[net.Error]()},
	}
	m, err := statemachine.New(def)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tc := range []struct {
		step string
		err  error
	}{
		{"create_database", fmt.Errorf("create database: %w", errQuota)},
		{"create_namespace", fmt.Errorf("create namespace: %w", errQuota)},
		{"create_service", fmt.Errorf("create service: %w", errInvalid)},
		{"create_service", &net.DNSError{Err: "no such host", Name: "api.example", IsTimeout: true}},
	} {
		class, ok := m.Classify(tc.step, tc.err)
		if !ok {
			fmt.Printf("%s: unclassified\n", tc.step)
			continue
		}
		first, _ := class.Delay(1)
		third, _ := class.Delay(3)
		fmt.Printf("%s: %s final=%t retry %v, %v\n", tc.step, class.Name, class.Final, first, third)
	}
	// Output:
	// create_database: quota final=false retry 1m0s, 5m0s
	// create_namespace: unclassified
	// create_service: invalid final=true retry 0s, 0s
	// create_service: network final=false retry 0s, 0s
}

// The classes that name a step are tried before those that name none,
// each group in declaration order.
func TestClassifyOrder(t *testing.T) {
	def := gateway()
	def.Errors = []statemachine.ErrorClass{
		{Name: "any-quota", Match: statemachine.ErrorIs(errQuota), Final: true},
		{Name: "db-quota", Steps: []string{"create_database"}, Match: statemachine.ErrorIs(errQuota)},
		{Name: "db-other", Steps: []string{"create_database"}, Match: func(error) bool { return true }},
	}
	m, err := statemachine.New(def)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		step string
		err  error
		want string
	}{
		{"create_database", errQuota, "db-quota"},
		{"create_database", errInvalid, "db-other"},
		{"create_namespace", errQuota, "any-quota"},
		{"create_namespace", errInvalid, ""},
		{"create_database", nil, ""},
	} {
		class, ok := m.Classify(tc.step, tc.err)
		if class.Name != tc.want || ok != (tc.want != "") {
			t.Errorf("Classify(%s, %v) = %q, %t; want %q", tc.step, tc.err, class.Name, ok, tc.want)
		}
	}
	if got := strings.Join(m.ErrorClasses(), ","); got != "any-quota,db-quota,db-other" {
		t.Errorf("ErrorClasses() = %s", got)
	}
}

// A class's schedule repeats its last delay.
func TestErrorClassDelay(t *testing.T) {
	c := statemachine.ErrorClass{Retry: []time.Duration{time.Second, time.Minute}}
	for n, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: time.Minute, 9: time.Minute} {
		if got, ok := c.Delay(n); !ok || got != want {
			t.Errorf("Delay(%d) = %v, %t; want %v", n, got, ok, want)
		}
	}
	if _, ok := (statemachine.ErrorClass{}).Delay(1); ok {
		t.Error("a class without a schedule reports one")
	}
}

// New rejects classes it cannot use, naming each.
func TestErrorClassesBuild(t *testing.T) {
	match := statemachine.ErrorIs(errQuota)
	for _, tc := range []struct {
		name  string
		class []statemachine.ErrorClass
		want  error
	}{
		{"empty name", []statemachine.ErrorClass{{Match: match}}, statemachine.ErrDuplicate},
		{"name twice", []statemachine.ErrorClass{{Name: "a", Match: match}, {Name: "a", Match: match}}, statemachine.ErrDuplicate},
		{"no match", []statemachine.ErrorClass{{Name: "a"}}, statemachine.ErrIncomplete},
		{"final and retried", []statemachine.ErrorClass{{Name: "a", Match: match, Final: true, Retry: []time.Duration{time.Second}}}, statemachine.ErrContradiction},
		{"zero delay", []statemachine.ErrorClass{{Name: "a", Match: match, Retry: []time.Duration{0}}}, statemachine.ErrInvalid},
		{"unknown step", []statemachine.ErrorClass{{Name: "a", Match: match, Steps: []string{"create_nothing"}}}, statemachine.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := gateway()
			def.Errors = tc.class
			if _, err := statemachine.New(def); !errors.Is(err, tc.want) {
				t.Fatalf("New: %v, want an error matching %v", err, tc.want)
			}
		})
	}
}

// Apply records a failed attempt's class, and forgets it with progress.
func TestApplyRecordsErrorClass(t *testing.T) {
	m, err := statemachine.New(gateway())
	if err != nil {
		t.Fatal(err)
	}
	st := m.NewStatus()
	d, err := m.Decide(Running, st, now)
	if err != nil {
		t.Fatal(err)
	}
	if st, err = m.Apply(st, d, statemachine.Report{OperationID: "op-1", Now: now}); err != nil {
		t.Fatal(err)
	}
	d, _ = m.Decide(Running, st, now)
	failed, err := m.Apply(st, d, statemachine.Report{Outcome: statemachine.Failed, Err: errQuota, ErrorClass: "quota", Now: now, RetryAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if op := failed.Operation; op.ErrorClass != "quota" || !op.RetryAt.Equal(now.Add(time.Minute)) || failed.Equal(st) {
		t.Fatalf("failed operation %+v", op)
	}
	d, _ = m.Decide(Running, failed, now.Add(time.Minute))
	done, err := m.Apply(failed, d, statemachine.Report{Outcome: statemachine.Done, Now: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if op := done.Operation; op.ErrorClass != "" || op.LastError != "" {
		t.Fatalf("operation after progress %+v", op)
	}
}
