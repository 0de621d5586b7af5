package docker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/moby/moby/client"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/store"
)

// TestWorkspaceLifecycle drives one workspace through its whole life on
// Docker with the WorkspaceController: running, a file written through the
// container, archived (container and volume gone, archive complete),
// running again from the archive (the file is back), deleted (nothing left
// in the engine).
func TestWorkspaceLifecycle(t *testing.T) {
	ctx := context.Background()
	cli := engine(t)
	img := image(t, cli)
	id := workspaceID()
	st, in, _ := newBackends(t, cli, id)
	mem, err := memory.New(memory.Config{Kinds: []string{dataplane.Kind}})
	if err != nil {
		t.Fatal(err)
	}
	ops := 0
	ctrl, err := dataplane.New(dataplane.Config{
		Store: mem, Instances: in, Storage: st,
		NewOperationID: func() string { ops++; return fmt.Sprintf("op%d", ops) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// reconcile runs reconciles until one wants nothing more.
	reconcile := func() {
		t.Helper()
		for range 30 {
			res, err := ctrl.Reconcile(ctx, id)
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if res.RequeueAfter == 0 {
				return
			}
		}
	}
	drive := func(s dataplane.State, want dataplane.Phase) *dataplane.Workspace {
		t.Helper()
		if _, err := ctrl.Get(ctx, id); errors.Is(err, store.ErrNotFound) {
			_, err = ctrl.Create(ctx, id, dataplane.Spec{State: s, Image: img})
			if err != nil {
				t.Fatal(err)
			}
		} else if _, err := ctrl.SetState(ctx, id, s); err != nil {
			t.Fatal(err)
		}
		reconcile()
		ws, err := ctrl.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ws.Status.Phase != want {
			t.Fatalf("phase %s, want %s", ws.Status.Phase, want)
		}
		return ws
	}

	drive(dataplane.StateRunning, dataplane.Running)
	addr, err := in.Addr(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	put(t, addr, "/notes/today.md", "remember the milk")

	ws := drive(dataplane.StateArchived, dataplane.Archived)
	if ok, _ := in.IsRunning(ctx, id); ok {
		t.Fatal("archived workspace has a running container")
	}
	if ok, _ := st.VolumeExists(ctx, id); ok {
		t.Fatal("archived workspace kept its volume")
	}
	if ok, err := st.ArchiveReady(ctx, ws.Status.ArchiveKey); !ok || err != nil {
		t.Fatalf("archive %q ready = %v, %v", ws.Status.ArchiveKey, ok, err)
	}

	drive(dataplane.StateRunning, dataplane.Running)
	addr, _ = in.Addr(ctx, id)
	if got := get(t, addr, "/notes/today.md"); got != "remember the milk" {
		t.Fatalf("after the restore GET = %q", got)
	}
	if m, _ := st.RestoreMarker(ctx, id); m != ws.Status.ArchiveKey {
		t.Fatalf("restore marker %q, want %q", m, ws.Status.ArchiveKey)
	}

	if _, err := ctrl.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if _, err := ctrl.Get(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted workspace still stored: %v", err)
	}
	if _, err := cli.ContainerInspect(ctx, local.ContainerName(id), client.ContainerInspectOptions{}); err == nil {
		t.Fatal("deleted workspace left its container")
	}
	if ok, _ := st.VolumeExists(ctx, id); ok {
		t.Fatal("deleted workspace left its volume")
	}
}
