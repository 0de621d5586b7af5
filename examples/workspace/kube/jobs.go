package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/examples/workspace/dataplane"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// Names and labels of storage jobs.
const (
	// LabelJob holds a storage Job's command (archive or restore).
	LabelJob = "workspace.tend.dev/job"
	// JobContainer is the name of a storage Job's one container.
	JobContainer = "storage-job"
	// JobScratchDir is where a storage Job's scratch space, an emptyDir
	// that goes with its Pod, is mounted: its TMPDIR.
	JobScratchDir = "/tmp"
)

// ErrVolumeInUse: a storage job, or a workspace's Pod, was asked to start
// on a claim that another Pod uses. Transient: the data plane deletes the
// workspace's Pod before it archives, and starts it only once the job has
// exited.
var ErrVolumeInUse = errors.New("kube: volume in use")

// JobsConfig configures [NewJobs].
type JobsConfig struct {
	// REST reaches the API server. Required.
	REST *rest.Config
	// Namespace holds the Jobs and the claims they mount. Required.
	Namespace string
	// Image is the storage job's image (a static build of cmd/storage-job
	// as entrypoint). Required.
	Image string
	// CredentialsSecret names a Secret in Namespace whose keys are the
	// object storage's variables (storagejob.EnvEndpoint,
	// storagejob.EnvAccessKey, storagejob.EnvSecretKey,
	// storagejob.EnvRegion): the Job's container takes them as its
	// environment. Empty means none, for file:// archive URLs.
	CredentialsSecret string
	// FieldManager names the runner's writes. Empty means
	// [DefaultFieldManager].
	FieldManager string
}

// Jobs is the Kubernetes dataplane.JobRunner: each storage job a Job of one
// Pod that never restarts, running the job image with the workspace's
// claim at storagejob.DataDir and an emptyDir as its scratch space at
// [JobScratchDir]. Its environment is the archive's URL, TMPDIR and the
// credentials Secret, nothing else; it mounts no service account token, so
// it cannot reach the API server. Status reads the Job's conditions and,
// for a failed Job, its Pod's exit code and termination message: nothing
// is kept in memory.
type Jobs struct {
	conn
	image, secret string
}

var _ dataplane.JobRunner = (*Jobs)(nil)

// NewJobs returns the job runner of cfg. It contacts nothing.
func NewJobs(cfg JobsConfig) (*Jobs, error) {
	if cfg.Image == "" {
		return nil, errors.New("kube: NewJobs needs REST, Namespace and Image")
	}
	c, err := newConn("NewJobs", cfg.REST, cfg.Namespace, cfg.FieldManager, 0)
	if err != nil {
		return nil, err
	}
	return &Jobs{conn: c, image: cfg.Image, secret: cfg.CredentialsSecret}, nil
}

func (j *Jobs) jobObject(name string) object {
	return object{resource: "jobs", namespace: j.namespace, name: name}
}

// Start implements dataplane.JobRunner.
func (j *Jobs) Start(ctx context.Context, job dataplane.Job) error {
	jobs := j.cs.BatchV1().Jobs(j.namespace)
	if _, err := jobs.Get(ctx, job.Name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return j.fail("get", j.jobObject(job.Name), err)
	}
	claim := ClaimName(job.WorkspaceID)
	ofJob := func(p *corev1.Pod) bool { return p.Labels[batchv1.JobNameLabel] == job.Name }
	if err := j.claimFree(ctx, claim, "job "+job.Name, ofJob); err != nil {
		return err
	}
	_, err := jobs.Create(ctx, j.jobSpec(job, claim), metav1.CreateOptions{FieldManager: j.manager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return j.fail("create", j.jobObject(job.Name), err)
	}
	return nil
}

// claimFree returns an error matching [ErrVolumeInUse] when a Pod that has
// not ended mounts claim, other than those for which mine is true; user
// names what waits for the claim.
func (c conn) claimFree(ctx context.Context, claim, user string, mine func(*corev1.Pod) bool) error {
	pods, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return c.fail("list", object{resource: "pods", namespace: c.namespace}, err)
	}
	var users []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || mine(&p) {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				users = append(users, p.Name)
			}
		}
	}
	if len(users) > 0 {
		return fmt.Errorf("%w: claim %s/%s is mounted by pods %s; %s waits", ErrVolumeInUse, c.namespace, claim, strings.Join(users, " "), user)
	}
	return nil
}

// jobSpec is the Job of job, mounting claim.
func (j *Jobs) jobSpec(job dataplane.Job, claim string) *batchv1.Job {
	labels := map[string]string{LabelWorkspace: job.WorkspaceID, LabelJob: job.Command}
	c := corev1.Container{
		Name:  JobContainer,
		Image: j.image,
		Args:  []string{job.Command},
		Env: []corev1.EnvVar{
			{Name: storagejob.EnvArchiveURL, Value: job.ArchiveURL},
			{Name: "TMPDIR", Value: JobScratchDir},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: storagejob.DataDir},
			{Name: "scratch", MountPath: JobScratchDir},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if j.secret != "" {
		c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: j.secret}}}}
	}
	never, none := false, int32(0)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: j.namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit: &none, // a failed job is judged, and run again, by the data plane
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: &never,
					Containers:                   []corev1.Container{c},
					Volumes: []corev1.Volume{
						{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
}

// Status implements dataplane.JobRunner: a Job whose Complete condition
// holds succeeded; one whose Failed condition holds failed, with the exit
// code and termination message of its Pod's container (-1 when the Pod
// never ran it).
func (j *Jobs) Status(ctx context.Context, name string) (dataplane.JobStatus, error) {
	job, err := j.cs.BatchV1().Jobs(j.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return dataplane.JobStatus{State: dataplane.JobAbsent}, nil
	}
	if err != nil {
		return dataplane.JobStatus{}, j.fail("get", j.jobObject(name), err)
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return dataplane.JobStatus{State: dataplane.JobSucceeded}, nil
		case batchv1.JobFailed:
			st := dataplane.JobStatus{State: dataplane.JobFailed, ExitCode: -1, Message: c.Reason + ": " + c.Message}
			if t, err := j.terminated(ctx, name); err != nil {
				return dataplane.JobStatus{}, err
			} else if t != nil {
				st.ExitCode, st.Message = int(t.ExitCode), cmp.Or(strings.TrimSpace(t.Message), t.Reason)
			}
			return st, nil
		}
	}
	return dataplane.JobStatus{State: dataplane.JobRunning}, nil
}

// terminated returns how the container of Job name's Pod ended, or nil.
func (j *Jobs) terminated(ctx context.Context, name string) (*corev1.ContainerStateTerminated, error) {
	pods, err := j.cs.CoreV1().Pods(j.namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
	if err != nil {
		return nil, j.fail("list", object{resource: "pods", namespace: j.namespace}, err)
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == JobContainer && cs.State.Terminated != nil {
				return cs.State.Terminated, nil
			}
		}
	}
	return nil, nil
}

// Remove implements dataplane.JobRunner: the Job and its Pod (background
// propagation).
func (j *Jobs) Remove(ctx context.Context, name string) error {
	bg := metav1.DeletePropagationBackground
	err := j.cs.BatchV1().Jobs(j.namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return j.fail("delete", j.jobObject(name), err)
	}
	return nil
}
