package kube_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
)

// TestWorkspaceLifecycle drives one workspace through its whole life on
// Kubernetes with the WorkspaceController: running (a Pod Ready on a node,
// its claim bound), a file written into its home, archived (Pod, claim and
// volume gone, archive complete), running again from the archive (the file
// is back, the claim marked), deleted (nothing left in the cluster).
func TestWorkspaceLifecycle(t *testing.T) {
	ctx := context.Background()
	cfg := servertest.Kube(t, "TEND_KUBECONFIG")
	ns := servertest.PodNamespace(t, servertest.Clientset(t, cfg), "tend-ws")
	id := dataplanetest.WorkspaceID()
	st, in := newBackends(t, cfg, ns, id)
	d := dataplanetest.NewDriver(t, dataplanetest.Config{ID: id, Image: testImage, Instances: in, Storage: st})
	gone := func(what string) {
		t.Helper()
		if p, err := in.Pod(ctx, id); p != nil || err != nil {
			t.Fatalf("%s: pod %v (%v)", what, p, err)
		}
		if c, err := st.Claim(ctx, id); c != nil || err != nil {
			t.Fatalf("%s: claim %v (%v)", what, c, err)
		}
	}

	d.Drive(dataplane.StateRunning, dataplane.Running)
	if p, _ := in.Pod(ctx, id); p == nil || p.Spec.NodeName == "" {
		t.Fatalf("running workspace: pod %v, want one on a node", p)
	}
	home := volumeFile(t, st, id, "")
	if err := os.MkdirAll(filepath.Join(home, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "notes/today.md"), []byte("remember the milk"), 0o644); err != nil {
		t.Fatal(err)
	}

	ws := d.Drive(dataplane.StateArchived, dataplane.Archived)
	gone("archived workspace")
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("archived workspace kept its directory %s: %v", home, err)
	}
	if ok, err := st.ArchiveReady(ctx, ws.Status.ArchiveKey); !ok || err != nil {
		t.Fatalf("archive %q ready = %v, %v", ws.Status.ArchiveKey, ok, err)
	}

	d.Drive(dataplane.StateRunning, dataplane.Running)
	if b, err := os.ReadFile(volumeFile(t, st, id, "notes/today.md")); string(b) != "remember the milk" {
		t.Fatalf("after the restore the file holds %q (%v)", b, err)
	}
	if m, _ := st.RestoreMarker(ctx, id); m != ws.Status.ArchiveKey {
		t.Fatalf("restore marker %q, want %q", m, ws.Status.ArchiveKey)
	}

	d.Delete()
	gone("deleted workspace")
}
