package docker_test

import (
	"context"
	"testing"

	"github.com/moby/moby/client"

	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/local"
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
	id := dataplanetest.WorkspaceID()
	st, in, _ := newBackends(t, cli, id)
	d := dataplanetest.NewDriver(t, dataplanetest.Config{ID: id, Image: img, Instances: in, Storage: st})

	d.Drive(dataplane.StateRunning, dataplane.Running)
	addr, err := in.Addr(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	put(t, addr, "/notes/today.md", "remember the milk")

	ws := d.Drive(dataplane.StateArchived, dataplane.Archived)
	if ok, _ := in.IsRunning(ctx, id); ok {
		t.Fatal("archived workspace has a running container")
	}
	if ok, _ := st.VolumeExists(ctx, id); ok {
		t.Fatal("archived workspace kept its volume")
	}
	if ok, err := st.ArchiveReady(ctx, ws.Status.ArchiveKey); !ok || err != nil {
		t.Fatalf("archive %q ready = %v, %v", ws.Status.ArchiveKey, ok, err)
	}

	d.Drive(dataplane.StateRunning, dataplane.Running)
	addr, _ = in.Addr(ctx, id)
	if got := get(t, addr, "/notes/today.md"); got != "remember the milk" {
		t.Fatalf("after the restore GET = %q", got)
	}
	if m, _ := st.RestoreMarker(ctx, id); m != ws.Status.ArchiveKey {
		t.Fatalf("restore marker %q, want %q", m, ws.Status.ArchiveKey)
	}

	d.Delete()
	if _, err := cli.ContainerInspect(ctx, local.ContainerName(id), client.ContainerInspectOptions{}); err == nil {
		t.Fatal("deleted workspace left its container")
	}
	if ok, _ := st.VolumeExists(ctx, id); ok {
		t.Fatal("deleted workspace left its volume")
	}
}
