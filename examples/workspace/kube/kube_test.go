package kube_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/dataplane/dataplanetest"
	"github.com/tendhq/tend/examples/workspace/kube"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// crash reports workspace id's Pod Failed, as its kubelet would when the
// container dies: the Pod stays, not Ready.
func crash(t *testing.T, in *kube.Instances, cfg *rest.Config, ns, id string) {
	t.Helper()
	ctx := context.Background()
	p, err := in.Pod(ctx, id)
	if err != nil || p == nil {
		t.Fatalf("pod of %s: %v %v", id, p, err)
	}
	p.Status.Phase = corev1.PodFailed
	p.Status.Conditions = nil
	if _, err := servertest.Clientset(t, cfg).CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestInstancesIdempotent: no Pod starts without its claim; Start makes a
// Pod the scheduler binds to a node and kwok makes Ready; Start on a
// running Pod is a no-op; Start after a crash replaces the Pod; Delete of
// a missing Pod is a no-op and keeps the volume.
func TestInstancesIdempotent(t *testing.T) {
	ctx := context.Background()
	cfg := servertest.Kube(t, "TEND_KUBECONFIG")
	ns := servertest.PodNamespace(t, servertest.Clientset(t, cfg), "tend-ws")
	id := dataplanetest.WorkspaceID()
	st, in := newBackends(t, cfg, ns, id)

	if err := in.Start(ctx, id, testImage); !errors.Is(err, dataplane.ErrNoVolume) {
		t.Fatalf("Start without a volume: %v, want ErrNoVolume", err)
	}
	if p, err := in.Pod(ctx, id); p != nil || err != nil {
		t.Fatalf("Start without a volume left pod %v (%v)", p, err)
	}
	if err := st.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := in.Start(ctx, id, testImage); err != nil {
		t.Fatal(err)
	}
	first, err := in.Pod(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if first.Spec.NodeName == "" || first.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != kube.ClaimName(id) {
		t.Fatalf("pod on node %q with volumes %+v; want scheduled, with claim %s", first.Spec.NodeName, first.Spec.Volumes, kube.ClaimName(id))
	}
	if ok, err := in.IsRunning(ctx, id); !ok || err != nil {
		t.Fatalf("IsRunning after Start = %v, %v", ok, err)
	}
	if err := in.Start(ctx, id, testImage); err != nil {
		t.Fatal(err)
	}
	if again, _ := in.Pod(ctx, id); again.UID != first.UID {
		t.Fatalf("second Start replaced the running pod %s by %s", first.UID, again.UID)
	}

	crash(t, in, cfg, ns, id)
	if ok, err := in.IsRunning(ctx, id); ok || err != nil {
		t.Fatalf("IsRunning after a crash = %v, %v", ok, err)
	}
	if err := in.Start(ctx, id, testImage); err != nil {
		t.Fatal(err)
	}
	if p, _ := in.Pod(ctx, id); p.UID == first.UID {
		t.Fatal("Start after a crash kept the failed pod")
	}

	for range 2 {
		if err := in.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := in.IsRunning(ctx, id); ok || err != nil {
		t.Fatalf("IsRunning after Delete = %v, %v", ok, err)
	}
	if p, _ := in.Pod(ctx, id); p != nil {
		t.Fatalf("Delete left pod %s (deletion requested at %v)", p.Name, p.DeletionTimestamp)
	}
	if ok, err := st.VolumeExists(ctx, id); !ok || err != nil {
		t.Fatalf("Delete lost the volume: %v, %v", ok, err)
	}
}

// TestStorageIdempotent: provision (a claim the binder binds to the volume
// Storage reserved for it), archive, delete and restore, each repeated; the
// restore marker, a claim annotation, follows the restore; a missing
// volume cannot be archived; nothing is left behind.
func TestStorageIdempotent(t *testing.T) {
	ctx := context.Background()
	cfg := servertest.Kube(t, "TEND_KUBECONFIG")
	cs := servertest.Clientset(t, cfg)
	ns := servertest.PodNamespace(t, cs, "tend-ws")
	id := dataplanetest.WorkspaceID()
	st, _ := newBackends(t, cfg, ns, id)

	if _, err := st.Archive(ctx, id, "op1"); !errors.Is(err, controller.ErrTerminal) || !errors.Is(err, archive.ErrNoSource) {
		t.Fatalf("Archive of a missing volume: %v, want terminal ErrNoSource", err)
	}
	for range 2 {
		if err := st.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	claim, err := st.Claim(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, kube.PersistentVolumeName(ns, id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The binder, not Storage, completes the binding on both sides.
	if pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID ||
		claim.Annotations["pv.kubernetes.io/bind-completed"] != "yes" {
		t.Fatalf("volume %s phase %s, claimRef %+v; claim %s annotations %v: want bound by the binder", pv.Name, pv.Status.Phase, pv.Spec.ClaimRef, claim.UID, claim.Annotations)
	}
	key := dataplanetest.ArchiveTwice(t, st, id, func(name string) string { return volumeFile(t, st, id, name) })
	dir := filepath.Dir(volumeFile(t, st, id, "src"))
	for range 2 {
		if err := st.DeleteVolume(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := st.VolumeExists(ctx, id); ok || err != nil {
		t.Fatalf("VolumeExists after DeleteVolume = %v, %v", ok, err)
	}
	if _, err := cs.CoreV1().PersistentVolumes().Get(ctx, kube.PersistentVolumeName(ns, id), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("volume after DeleteVolume: %v, want NotFound", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory %s after DeleteVolume: %v", dir, err)
	}

	dataplanetest.RestoreTwice(t, st, id, key)
	if c, _ := st.Claim(ctx, id); c.Annotations[kube.AnnotationRestoredFrom] != key {
		t.Fatalf("claim annotations %v, want %s = %s", c.Annotations, kube.AnnotationRestoredFrom, key)
	}
	dataplanetest.CheckRestoredThenDelete(t, st, id, func(name string) string { return volumeFile(t, st, id, name) })
	if c, err := st.Claim(ctx, id); c != nil || err != nil {
		t.Fatalf("claim left behind: %v %v", c, err)
	}
}

// TestErrors: an API server that does not answer, a missing namespace and
// a request RBAC forbids each fail with an error naming the object and
// what to do, and create nothing.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	cfg := servertest.Kube(t, "TEND_KUBECONFIG")
	cs := servertest.Clientset(t, cfg)
	ns := servertest.PodNamespace(t, cs, "tend-ws")
	dir := t.TempDir()
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	storage := func(cfg *rest.Config, ns string) *kube.Storage {
		st, err := kube.NewStorage(kube.StorageConfig{REST: cfg, Namespace: ns, BaseDir: filepath.Join(dir, "volumes"), Objects: objects, JobImage: testJobImage})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	down := rest.CopyConfig(cfg)
	down.Host = "https://127.0.0.1:1"
	nobody := rest.CopyConfig(cfg)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "tend-nobody"}

	for _, tc := range []struct {
		name string
		err  func() error
		want []string
	}{
		{"API server down", func() error { return storage(down, ns).Provision(ctx, "w1") },
			[]string{"persistentvolumeclaims " + ns + "/ws-w1-home", "the API server at https://127.0.0.1:1 does not answer"}},
		{"missing namespace", func() error { return storage(cfg, ns+"-missing").Provision(ctx, "w1") },
			[]string{"persistentvolumeclaims " + ns + "-missing/ws-w1-home", "namespace " + ns + "-missing does not exist: create it first"}},
		{"forbidden", func() error { return storage(nobody, ns).Provision(ctx, "w1") },
			[]string{"persistentvolumeclaims " + ns + "/ws-w1-home", `grant the kubeconfig's identity "get" on persistentvolumeclaims in namespace ` + ns}},
		{"forbidden pod", func() error {
			in, err := kube.NewInstances(kube.InstancesConfig{REST: nobody, Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			return in.Delete(ctx, "w1")
		}, []string{"pods " + ns + "/ws-w1", `grant the kubeconfig's identity "delete" on pods in namespace ` + ns}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want an error containing %q", err, want)
				}
			}
		})
	}
	if _, err := cs.CoreV1().PersistentVolumes().Get(ctx, kube.PersistentVolumeName(ns, "w1"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a failed Provision left a volume: %v", err)
	}
}

// TestConfigValidation: constructors refuse incomplete configs.
func TestConfigValidation(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	objects, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	abs := t.TempDir()
	tests := []struct {
		name string
		cfg  any
	}{
		{"instances without REST", kube.InstancesConfig{Namespace: "n"}},
		{"instances without namespace", kube.InstancesConfig{REST: cfg}},
		{"instances negative timeout", kube.InstancesConfig{REST: cfg, Namespace: "n", StartTimeout: -1}},
		{"storage without objects", kube.StorageConfig{REST: cfg, Namespace: "n", BaseDir: abs, JobImage: testJobImage}},
		{"storage relative base", kube.StorageConfig{REST: cfg, Namespace: "n", BaseDir: "volumes", Objects: objects, JobImage: testJobImage}},
		{"storage without namespace", kube.StorageConfig{REST: cfg, BaseDir: abs, Objects: objects, JobImage: testJobImage}},
		{"storage without job image", kube.StorageConfig{REST: cfg, Namespace: "n", BaseDir: abs, Objects: objects}},
		{"jobs without image", kube.JobsConfig{REST: cfg, Namespace: "n"}},
		{"jobs without namespace", kube.JobsConfig{REST: cfg, Image: testJobImage}},
		{"job host without REST", kube.JobHostConfig{Namespace: "n"}},
		{"job host negative interval", kube.JobHostConfig{REST: cfg, Namespace: "n", Interval: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			switch c := tt.cfg.(type) {
			case kube.InstancesConfig:
				_, err = kube.NewInstances(c)
			case kube.StorageConfig:
				_, err = kube.NewStorage(c)
			case kube.JobsConfig:
				_, err = kube.NewJobs(c)
			case kube.JobHostConfig:
				_, err = kube.NewJobHost(c)
			}
			if err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// TestStorageJobIsolated: an archive runs as a Job of one Pod that mounts
// the workspace's claim and a scratch emptyDir, takes as its environment
// the archive's URL, TMPDIR and the credentials Secret and nothing else,
// mounts no service account token (it cannot reach the API server) and is
// never run again by Kubernetes. While it runs neither the workspace's Pod
// nor a second job starts on the claim. Once it has exited the Job is
// removed; a restore whose archive is missing fails for good, with the
// job's exit code and message.
func TestStorageJobIsolated(t *testing.T) {
	ctx := context.Background()
	cfg := servertest.Kube(t, "TEND_KUBECONFIG")
	cs := servertest.Clientset(t, cfg)
	ns := servertest.PodNamespace(t, cs, "tend-ws")
	id := dataplanetest.WorkspaceID()
	const secret = "object-storage"
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret},
		StringData: map[string]string{storagejob.EnvAccessKey: "job", storagejob.EnvSecretKey: "job-secret"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := kube.NewStorage(kube.StorageConfig{REST: cfg, Namespace: ns, BaseDir: filepath.Join(dir, "volumes"),
		Objects: objects, JobImage: testJobImage, CredentialsSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	in, err := kube.NewInstances(kube.InstancesConfig{REST: cfg, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	dataplanetest.Cleanup(t, id, in, st)
	// No job host runs yet: the job's Pod stays Running.
	key, name := dataplanetest.StartArchiveJob(t, st, id, func(name string) string { return volumeFile(t, st, id, name) })
	job, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the job: %v", err)
	}
	pod := job.Spec.Template.Spec
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("backoff limit %v, restart policy %s: want 0 and Never", job.Spec.BackoffLimit, pod.RestartPolicy)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the job's Pod mounts a service account token")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	var env []string
	for _, v := range c.Env {
		env = append(env, v.Name)
	}
	if want := []string{storagejob.EnvArchiveURL, "TMPDIR"}; !slices.Equal(env, want) {
		t.Errorf("environment %v, want %v", env, want)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != secret {
		t.Errorf("environment from %+v, want the Secret %s alone", c.EnvFrom, secret)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	for _, v := range pod.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == kube.ClaimName(id) && mounts[v.Name] == storagejob.DataDir:
		case v.EmptyDir != nil && mounts[v.Name] == kube.JobScratchDir:
		default:
			t.Errorf("the job mounts volume %+v at %q", v, mounts[v.Name])
		}
	}
	if len(pod.Volumes) != 2 {
		t.Errorf("%d volumes, want the claim and the scratch space", len(pod.Volumes))
	}

	waitJobPod(t, cs, ns, name)
	if err := in.Start(ctx, id, testImage); !errors.Is(err, kube.ErrVolumeInUse) {
		t.Errorf("workspace Pod started beside the job: %v", err)
	}
	jobs, err := kube.NewJobs(kube.JobsConfig{REST: cfg, Namespace: ns, Image: testJobImage})
	if err != nil {
		t.Fatal(err)
	}
	other := dataplane.Job{Name: name + "-other", Command: storagejob.Archive, WorkspaceID: id, ArchiveURL: objects.URL(key)}
	if err := jobs.Start(ctx, other); !errors.Is(err, kube.ErrVolumeInUse) {
		t.Errorf("second job started on the claim: %v", err)
	}

	runJobHost(t, cfg, ns)
	got, err := dataplanetest.Exited(t, func() (string, error) { return st.Archive(ctx, id, "op1") })
	if err != nil || got != key {
		t.Fatalf("Archive once the job exited = %q, %v", got, err)
	}
	if j, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err == nil && j.DeletionTimestamp == nil {
		t.Error("the job is left")
	}
	if ok, err := st.ArchiveReady(ctx, key); !ok || err != nil {
		t.Fatalf("ArchiveReady = %v, %v", ok, err)
	}

	missing := archive.Key(id, "op-missing")
	_, err = dataplanetest.Exited(t, func() (string, error) { return st.Restore(ctx, id, missing) })
	if !errors.Is(err, dataplane.ErrJobFailed) || !errors.Is(err, controller.ErrTerminal) ||
		!strings.Contains(err.Error(), "exited with 2") {
		t.Fatalf("Restore of a missing archive: %v, want a terminal ErrJobFailed with exit code 2", err)
	}
}

// waitJobPod waits until a Pod of Job name runs.
func waitJobPod(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(time.Minute); ; {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 && pods.Items[0].Status.Phase == corev1.PodRunning {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Pod of job %s runs after a minute: %+v", name, pods.Items)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
