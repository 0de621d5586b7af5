package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/examples/raftcluster/etcdproc"
	"github.com/tendhq/tend/store"
)

// Runtime runs members' processes under their document keys.
// *etcdproc.Runtime implements it.
type Runtime interface {
	// Start starts the member under key unless it is running.
	Start(key string, m etcdproc.Member) error
	// Stop stops the member under key and waits until it has exited.
	Stop(ctx context.Context, key string) error
	// Running reports whether the member under key is running.
	Running(key string) bool
	// PID returns the process id of the member under key, 0 if none.
	PID(key string) int
	// Exited reports the key of each member that exited without being
	// stopped.
	Exited() <-chan string
}

var _ Runtime = (*etcdproc.Runtime)(nil)

// memberReconciler keeps each Member's process running on its data
// directory (an operator's one-replica ReplicaSet with its volume), and stops it
// and removes its data when the document is deleted. It starts a process with
// the initial cluster its cluster's member configuration holds at the time,
// as a Pod reads the ConfigMap it mounts.
type memberReconciler struct {
	members *store.Collection[MemberSpec, MemberStatus]
	rt      Runtime
	config  MemberConfig
}

// Reconcile starts a member's process if it is not running (a killed member
// comes back on its data directory, with its id) and runs its finalizer when
// its document is deleted.
func (r *memberReconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	m, err := r.members.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return controller.Result{}, r.rt.Stop(ctx, key)
	}
	if err != nil {
		return controller.Result{}, err
	}
	if m.Terminating() {
		if err := r.rt.Stop(ctx, key); err != nil {
			return controller.Result{}, err
		}
		if err := os.RemoveAll(m.Spec.DataDir); err != nil {
			return controller.Result{}, err
		}
		m.Finalizers = slices.DeleteFunc(slices.Clone(m.Finalizers), func(f string) bool { return f == MemberFinalizer })
		_, err := r.members.UpdateSpec(ctx, m)
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return controller.Result{}, err
	}
	if !m.HasFinalizer(MemberFinalizer) {
		m.Finalizers = append(slices.Clone(m.Finalizers), MemberFinalizer)
		if m, err = r.members.UpdateSpec(ctx, m); err != nil {
			return controller.Result{}, err
		}
	}
	st := m.Status
	if !r.rt.Running(key) {
		c, ok := clusterOf(m)
		if !ok {
			return controller.Result{}, controller.Terminal(fmt.Errorf("operator: member %s has no controlling Cluster", key))
		}
		initial, err := r.config.InitialCluster(ctx, c)
		if err != nil {
			return controller.Result{}, err
		}
		if err := r.rt.Start(key, process(m.Spec, initial)); err != nil {
			return controller.Result{}, err
		}
		st.Starts++
	}
	st.Running, st.PID = true, r.rt.PID(key)
	if st != m.Status {
		m.Status = st
		_, err = r.members.UpdateStatus(ctx, m)
	}
	return controller.Result{}, err
}

// clusterOf returns the cluster that controls member m.
func clusterOf(m *memberObject) (ClusterRef, bool) {
	for _, o := range m.Owners {
		if o.Controller && o.Kind == KindCluster {
			return ClusterRef{Key: o.Key, UID: o.UID}, true
		}
	}
	return ClusterRef{}, false
}

// process returns the etcd configuration of a member started with the
// initial cluster initial.
func process(s MemberSpec, initial string) etcdproc.Member {
	return etcdproc.Member{
		Name:           s.Name,
		DataDir:        s.DataDir,
		PeerURL:        s.PeerURL,
		ClientURL:      s.ClientURL,
		InitialCluster: initial,
		ClusterState:   s.ClusterState,
		Token:          s.Token,
	}
}
