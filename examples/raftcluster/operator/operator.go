package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tendhq/tend/manager"

	"go.uber.org/zap"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/expectations"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// Defaults of Config.
const (
	DefaultPollInterval    = 250 * time.Millisecond
	DefaultExpectationsTTL = time.Minute
	DefaultMemberResync    = 2 * time.Second
)

// ErrInvalidConfig is returned, wrapped with the reason, by [New].
var ErrInvalidConfig = errors.New("operator: invalid config")

// Config configures an Operator.
type Config struct {
	// Backend stores the Cluster and Member documents; it must hold both
	// kinds. Required.
	Backend store.Backend
	// Membership changes the Raft membership. Required; *[Etcd] for etcd.
	Membership Membership
	// Runtime runs the members' processes. Required; *etcdproc.Runtime.
	Runtime Runtime
	// MemberConfig keeps each cluster's member configuration, the initial
	// cluster its members start with. Required: a *[DocumentMemberConfig]
	// in a store, or a ConfigMap on Kubernetes.
	MemberConfig MemberConfig
	// DataDir holds the members' data directories, one per member under
	// the cluster's key. Required.
	DataDir string
	// PollInterval is how soon a step in progress is looked at again.
	// Zero means [DefaultPollInterval].
	PollInterval time.Duration
	// ExpectationsTTL bounds how long a cluster waits to observe a Member it
	// created or deleted. Zero means [DefaultExpectationsTTL].
	ExpectationsTTL time.Duration
	// MemberResync is how often every member's process is checked, in case
	// an exit was not reported. Zero means [DefaultMemberResync].
	MemberResync time.Duration
	// Logger receives the controllers' logs. Nil means no logs.
	Logger *zap.Logger
}

// Operator runs the two controllers of the example: "cluster" turns each
// Cluster's replicas into members one recorded step at a time, and "member"
// keeps each Member's process running.
type Operator struct {
	cfg      Config
	clusters *store.Collection[ClusterSpec, ClusterStatus]
	members  *store.Collection[MemberSpec, MemberStatus]
}

// New returns an operator configured by cfg. It starts nothing.
func New(cfg Config) (*Operator, error) {
	switch {
	case cfg.Backend == nil, cfg.Membership == nil, cfg.Runtime == nil, cfg.MemberConfig == nil, cfg.DataDir == "":
		return nil, fmt.Errorf("%w: Backend, Membership, Runtime, MemberConfig and DataDir are required", ErrInvalidConfig)
	case cfg.PollInterval < 0, cfg.ExpectationsTTL < 0, cfg.MemberResync < 0:
		return nil, fmt.Errorf("%w: negative duration", ErrInvalidConfig)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.ExpectationsTTL == 0 {
		cfg.ExpectationsTTL = DefaultExpectationsTTL
	}
	if cfg.MemberResync == 0 {
		cfg.MemberResync = DefaultMemberResync
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	clusters, err := store.NewCollection[ClusterSpec, ClusterStatus](cfg.Backend, KindCluster, store.CollectionConfig{})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	members, err := store.NewCollection[MemberSpec, MemberStatus](cfg.Backend, KindMember, store.CollectionConfig{})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return &Operator{cfg: cfg, clusters: clusters, members: members}, nil
}

// Clusters returns the typed view of the Cluster documents.
func (o *Operator) Clusters() *store.Collection[ClusterSpec, ClusterStatus] { return o.clusters }

// Members returns the typed view of the Member documents.
func (o *Operator) Members() *store.Collection[MemberSpec, MemberStatus] { return o.members }

// Run runs both controllers until ctx ends and returns once everything it
// started has stopped. Each run starts with no memory of the last: its
// expectations and member cache are new, and all it knows of a cluster's
// progress is what the cluster's status records, as after a crash.
func (o *Operator) Run(ctx context.Context) error {
	exp, err := expectations.NewNames[string, int](expectations.NamesConfig{TTL: o.cfg.ExpectationsTTL})
	if err != nil {
		return err
	}
	// One informer per kind for the whole operator: the member cache, the
	// member controller and its resync share the Members' watch.
	f, err := informer.NewFactory(o.cfg.Backend, informer.FactoryConfig{})
	if err != nil {
		return err
	}
	cache, err := newMemberCache(f, o.members, exp)
	if err != nil {
		return err
	}
	// etcd refuses a reconfiguration for a few seconds after the last one
	// (until it has been connected to its peers for five seconds), and a
	// leader election takes about a second: retry often, never slowly.
	retry := func() workqueue.RateLimiter[string] {
		l, _ := workqueue.NewExponentialLimiter[string](workqueue.ExponentialConfig{Base: 50 * time.Millisecond, Max: 2 * time.Second})
		return l
	}
	cc, err := controller.New(controller.Config{
		Name: "cluster",
		Reconciler: &clusterReconciler{
			clusters: o.clusters,
			members:  o.members,
			cache:    cache,
			exp:      exp,
			ms:       o.cfg.Membership,
			config:   o.cfg.MemberConfig,
			dataDir:  o.cfg.DataDir,
			poll:     o.cfg.PollInterval,
		},
		Sources:     []controller.Source{controller.For(f, KindCluster), cache},
		RateLimiter: retry(),
		Logger:      o.cfg.Logger,
	})
	if err != nil {
		return err
	}
	mc, err := controller.New(controller.Config{
		Name:       "member",
		Reconciler: &memberReconciler{members: o.members, rt: o.cfg.Runtime, config: o.cfg.MemberConfig},
		Sources: []controller.Source{
			controller.For(f, KindMember),
			controller.Channel(o.cfg.Runtime.Exited()),
			controller.Resync(f, KindMember, o.cfg.MemberResync),
		},
		Workers:     4,
		RateLimiter: retry(),
		Logger:      o.cfg.Logger,
	})
	if err != nil {
		return err
	}
	m, err := manager.New(manager.Config{
		Controllers: []*controller.Controller{cc, mc},
		Informers:   f,
		Logger:      o.cfg.Logger,
	})
	if err != nil {
		return err
	}
	return m.Run(ctx)
}

// ErrNotSettled is returned by [Operator.Settled] while a cluster has not
// reached its intent.
var ErrNotSettled = errors.New("operator: cluster not settled")

// Settled returns the sorted member ids of the cluster under key once it
// has settled at replicas members: its status is Running with no plan, for
// the newest spec, and its membership record names exactly the members
// etcd's own member list shows started, the Member documents that exist
// and are not being deleted, and the member configuration. Otherwise it
// returns an error matching ErrNotSettled that says what differs, or the
// error of a read.
func (o *Operator) Settled(ctx context.Context, key string, replicas int) ([]int, error) {
	c, err := o.clusters.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	st := c.Status
	if st.Phase != Running || st.Plan != nil || st.ObservedGeneration != c.Generation || len(st.Members) != replicas {
		return nil, fmt.Errorf("%w: phase %s, plan %+v, members %v", ErrNotSettled, st.Phase, st.Plan, st.IDs())
	}
	ids := slices.Sorted(slices.Values(st.IDs()))
	want := make([]string, len(ids))
	for i, id := range ids {
		want[i] = MemberName(id)
	}
	slices.Sort(want)
	v, err := o.cfg.Membership.View(ctx, st.Endpoints())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotSettled, err)
	}
	if got := v.Names(); !slices.Equal(got, want) {
		return nil, fmt.Errorf("%w: etcd lists %v, the record %v", ErrNotSettled, got, want)
	}
	docs, _, err := o.members.List(ctx, store.ListOptions{OwnerUID: c.UID})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range docs {
		if !d.Terminating() {
			names = append(names, d.Spec.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		return nil, fmt.Errorf("%w: member documents %v, the record %v", ErrNotSettled, names, want)
	}
	initial, err := o.cfg.MemberConfig.InitialCluster(ctx, ClusterRef{Key: c.Key, UID: c.UID})
	if err != nil && !errors.Is(err, ErrNoMemberConfig) {
		return nil, err
	}
	if want := InitialCluster(st.Members); initial != want {
		return nil, fmt.Errorf("%w: member configuration %q, the record %q", ErrNotSettled, initial, want)
	}
	return ids, nil
}

// WaitSettled calls Settled every poll interval until it succeeds, fails
// with an error other than ErrNotSettled, or ctx ends; then it returns the
// last error.
func (o *Operator) WaitSettled(ctx context.Context, key string, replicas int) ([]int, error) {
	for {
		ids, err := o.Settled(ctx, key, replicas)
		if err == nil || !errors.Is(err, ErrNotSettled) {
			return ids, err
		}
		if !sleep(ctx, o.cfg.PollInterval) {
			return nil, fmt.Errorf("%w (%v)", err, ctx.Err())
		}
	}
}
