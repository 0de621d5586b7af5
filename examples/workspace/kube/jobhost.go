package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// JobHostConfig configures [NewJobHost].
type JobHostConfig struct {
	// REST reaches the API server. Required.
	REST *rest.Config
	// Namespace holds the storage Jobs to run. Required.
	Namespace string
	// Scratch is the directory under which each job gets its scratch
	// space, removed when the job ends. Empty means the system's temporary
	// directory.
	Scratch string
	// Interval is how often the host looks for Pods to run. Zero means
	// 100 ms.
	Interval time.Duration
}

// JobHost runs the storage Jobs' Pods of a namespace on this host, in
// process, for a cluster whose nodes run no containers: kwok's fake nodes,
// which mark a Pod Running and would mark a Job's Pod Succeeded without
// running anything. It stands in for a kubelet, and for that only: it runs
// the job's program ([storagejob.Main]) as the Pod's container would, with
// the container's arguments and environment (its own variables and those of
// the Secrets it names), the volume at the host path of the claim's
// PersistentVolume and a scratch directory of its own, then writes the
// container's exit code and last line of output into the Pod's status and
// its phase, Succeeded or Failed, for the Job controller to judge. The
// volume's node must be this host, as [Storage] requires anyway.
//
// kwok must not complete Job Pods itself: the test command configures it
// without that stage.
type JobHost struct {
	conn
	scratch  string
	interval time.Duration
}

// NewJobHost returns the job host of cfg. It contacts nothing and starts
// nothing: see [JobHost.Run].
func NewJobHost(cfg JobHostConfig) (*JobHost, error) {
	if cfg.Interval < 0 {
		return nil, errors.New("kube: NewJobHost: negative Interval")
	}
	c, err := newConn("NewJobHost", cfg.REST, cfg.Namespace, "", 0)
	if err != nil {
		return nil, err
	}
	h := &JobHost{conn: c, scratch: cfg.Scratch, interval: cfg.Interval}
	if h.interval == 0 {
		h.interval = 100 * time.Millisecond
	}
	return h, nil
}

// Run runs every storage Job Pod of the namespace that is Running and has
// not ended, each once, until ctx ends; it returns then, once the jobs it
// started have stopped (a job stopped by ctx is not reported: a kubelet that
// goes away reports nothing either). Errors reading the API are retried at
// the next look.
func (h *JobHost) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[types.UID]bool{}
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		pods, err := h.cs.CoreV1().Pods(h.namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelJob})
		if err == nil {
			for _, p := range pods.Items {
				if started[p.UID] || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
					continue
				}
				started[p.UID] = true
				wg.Go(func() { h.runPod(ctx, &p) })
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// runPod runs the storage job of pod and records how it ended.
func (h *JobHost) runPod(ctx context.Context, pod *corev1.Pod) {
	code, out := h.runJob(ctx, pod)
	if ctx.Err() != nil {
		return
	}
	message := strings.TrimSpace(out)
	if i := strings.LastIndexByte(message, '\n'); i >= 0 {
		message = message[i+1:]
	}
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != storagejob.ExitOK {
		phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	for {
		var statuses []corev1.ContainerStatus
		for _, c := range pod.Spec.Containers {
			statuses = append(statuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason, Message: message, FinishedAt: now},
			}})
		}
		pod.Status.Phase, pod.Status.ContainerStatuses = phase, statuses
		_, err := h.cs.CoreV1().Pods(h.namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) || ctx.Err() != nil {
			return
		}
		// A conflict (kwok wrote the status meanwhile) or a failed request:
		// read the Pod again and write again.
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.interval):
		}
		fresh, err := h.cs.CoreV1().Pods(h.namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || ctx.Err() != nil {
			return
		}
		if err == nil {
			pod = fresh
		}
	}
}

// runJob runs the storage job of pod's one container and returns its exit
// code and what it wrote.
func (h *JobHost) runJob(ctx context.Context, pod *corev1.Pod) (int, string) {
	var out bytes.Buffer
	if len(pod.Spec.Containers) != 1 {
		return storagejob.ExitTerminal, fmt.Sprintf("pod %s/%s: want one container, found %d", h.namespace, pod.Name, len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	env, err := h.env(ctx, c)
	if err != nil {
		return storagejob.ExitRetry, err.Error()
	}
	data, err := h.dataDir(ctx, pod, c)
	if err != nil {
		return storagejob.ExitRetry, err.Error()
	}
	scratch, err := os.MkdirTemp(h.scratch, pod.Name+"-")
	if err != nil {
		return storagejob.ExitRetry, err.Error()
	}
	defer os.RemoveAll(scratch)
	args := append(append(append([]string(nil), c.Command...), c.Args...), "-data", data, "-scratch", scratch)
	code := storagejob.Main(ctx, args, func(name string) string { return env[name] }, &out)
	return code, out.String()
}

// env returns the environment of container c: its own variables and those
// of the Secrets it takes whole.
func (h *JobHost) env(ctx context.Context, c corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.SecretRef == nil {
			continue
		}
		s, err := h.cs.CoreV1().Secrets(h.namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, h.fail("get", object{resource: "secrets", namespace: h.namespace, name: from.SecretRef.Name}, err)
		}
		for k, v := range s.Data {
			env[from.Prefix+k] = string(v)
		}
	}
	for _, v := range c.Env {
		env[v.Name] = v.Value
	}
	return env, nil
}

// dataDir returns the directory on this host of the volume c mounts at
// storagejob.DataDir: the host path of the PersistentVolume its claim is
// bound to.
func (h *JobHost) dataDir(ctx context.Context, pod *corev1.Pod, c corev1.Container) (string, error) {
	var volume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == storagejob.DataDir {
			volume = m.Name
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name != volume || v.PersistentVolumeClaim == nil {
			continue
		}
		claim := v.PersistentVolumeClaim.ClaimName
		pvc, err := h.cs.CoreV1().PersistentVolumeClaims(h.namespace).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return "", h.fail("get", object{resource: "persistentvolumeclaims", namespace: h.namespace, name: claim}, err)
		}
		pv, err := h.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return "", h.fail("get", object{resource: "persistentvolumes", name: pvc.Spec.VolumeName}, err)
		}
		if pv.Spec.HostPath == nil {
			return "", fmt.Errorf("kube: volume %s of pod %s/%s is not a host path", pv.Name, h.namespace, pod.Name)
		}
		return pv.Spec.HostPath.Path, nil
	}
	return "", fmt.Errorf("kube: pod %s/%s mounts no claim at %s", h.namespace, pod.Name, storagejob.DataDir)
}
