package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/tendhq/tend/store"
)

// roundTrip checks that -o json and -o yaml write every document as the
// store holds it.
func roundTrip(t *testing.T, b store.Backend, spec string) {
	t.Helper()
	ctx := context.Background()
	res, err := b.List(ctx, widgetKind, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := tend(t, "--store", spec, "get", widgetKind, "-o", "json")
	if r.code != 0 {
		t.Fatalf("get -o json: exit %d: %s", r.code, r.stderr)
	}
	var list struct{ Items []document }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("get -o json wrote %q: %v", r.stdout, err)
	}
	if len(list.Items) != len(res.Items) {
		t.Fatalf("get -o json wrote %d documents, the store holds %d", len(list.Items), len(res.Items))
	}
	for i, want := range res.Items {
		got := list.Items[i]
		if diff := cmp.Diff(want.Meta, got.Meta, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: meta (-store +output):\n%s", want.Meta.Key, diff)
		}
		sameJSON(t, want.Meta.Key+" spec", want.Spec, got.Spec)
		sameJSON(t, want.Meta.Key+" status", want.Status, got.Status)

		y := tend(t, "--store", spec, "get", widgetKind, want.Meta.Key, "-o", "yaml")
		data, err := yaml.YAMLToJSON([]byte(y.stdout))
		if err != nil || y.code != 0 {
			t.Fatalf("get %s -o yaml: exit %d, %v: %s", want.Meta.Key, y.code, err, y.stderr)
		}
		var one document
		if err := json.Unmarshal(data, &one); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Meta, one.Meta, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: yaml meta (-store +output):\n%s", want.Meta.Key, diff)
		}
		sameJSON(t, want.Meta.Key+" yaml status", want.Status, one.Status)
	}
}

// sameJSON checks that two JSON texts hold the same value.
func sameJSON(t *testing.T, what string, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-store +output):\n%s", what, diff)
	}
}

// watch starts tend get --watch -o json on the store and returns its
// output, a line at a time, and a function that interrupts it and returns
// its exit code.
func watch(t *testing.T, spec string, args ...string) (<-chan string, func() int) {
	t.Helper()
	return watchWith(t, nil, []string{"--store", spec}, args...)
}

// watchWith is watch connected with the flags connect and the environment
// variables env.
func watchWith(t *testing.T, env, connect []string, args ...string) (<-chan string, func() int) {
	t.Helper()
	cmd := exec.Command(binary, slices.Concat(connect, []string{"get", "--watch", "-o", "json"}, args)...)
	cmd.Env = append(append(os.Environ(), "TEND_STORE="), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	stop := func() int {
		_ = cmd.Process.Signal(syscall.SIGINT)
		for range lines { // drain, so the reader ends
		}
		<-done
		err := cmd.Wait()
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return lines, stop
}

// next returns the next line of a watch, failing after a while.
func next(t *testing.T, lines <-chan string) document {
	t.Helper()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatal("the watch ended")
		}
		var d document
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("watch wrote %q: %v", line, err)
		}
		return d
	case <-time.After(30 * time.Second):
		t.Fatal("the watch wrote nothing for 30s")
	}
	return document{}
}

// testWatch checks that --watch writes the documents, then a change made
// while it runs, and ends with exit code 0 when interrupted.
func testWatch(t *testing.T, b store.Backend, spec string) {
	t.Helper()
	testWatchWith(t, b, nil, []string{"--store", spec})
}

// testWatchWith is testWatch connected with the flags connect and the
// environment variables env.
func testWatchWith(t *testing.T, b store.Backend, env, connect []string) {
	ctx := context.Background()
	lines, stop := watchWith(t, env, connect, widgetKind)
	seen := map[string]bool{}
	for range widgets {
		seen[next(t, lines).Meta.Key] = true
	}
	if len(seen) != len(widgets) {
		t.Fatalf("the watch listed %v", seen)
	}
	doc, err := b.Get(ctx, widgetKind, "w-down")
	if err != nil {
		t.Fatal(err)
	}
	doc.Meta.Labels["on-call"] = "paged"
	if _, err := b.UpdateSpec(ctx, doc); err != nil {
		t.Fatal(err)
	}
	got := next(t, lines)
	if got.Meta.Key != "w-down" || got.Meta.Labels["on-call"] != "paged" {
		t.Errorf("after the change the watch wrote %+v", got.Meta)
	}
	if code := stop(); code != 0 {
		t.Errorf("interrupted, the watch exited with %d, want 0", code)
	}
}

func TestWatchMemoryRefused(t *testing.T) {
	_, path := memorySnapshot(t)
	r := tend(t, "--store", "memory:"+path, "get", widgetKind, "--watch")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--watch needs a store the controllers share") {
		t.Errorf("get --watch on a snapshot: exit %d, %q", r.code, r.stderr)
	}
}
