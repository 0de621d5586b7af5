package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// RaftMember is one member as the Raft cluster itself lists it.
type RaftMember struct {
	// ID is the cluster's own id of the member (etcd's, not the operator's).
	ID uint64
	// Name is empty until the member has started and published it.
	Name    string
	PeerURL string
}

// View is the Raft cluster's own view of its membership.
type View struct {
	Members []RaftMember
	// Leader is the ID of the leader, 0 when there is none.
	Leader uint64
}

// ByPeerURL returns the member listening on peerURL.
func (v View) ByPeerURL(peerURL string) (RaftMember, bool) {
	i := slices.IndexFunc(v.Members, func(m RaftMember) bool { return m.PeerURL == peerURL })
	if i < 0 {
		return RaftMember{}, false
	}
	return v.Members[i], true
}

// Names returns the names of the members, "?" for one not started yet.
func (v View) Names() []string {
	names := make([]string, len(v.Members))
	for i, m := range v.Members {
		names[i] = m.Name
		if names[i] == "" {
			names[i] = "?"
		}
	}
	slices.Sort(names)
	return names
}

// LeaderName returns the name of the leader, or "none".
func (v View) LeaderName() string {
	for _, m := range v.Members {
		if m.ID == v.Leader && v.Leader != 0 {
			return m.Name
		}
	}
	return "none"
}

// Membership is the part of a Raft cluster's API the operator uses. Each
// call names the client endpoints to use, taken from the cluster's status.
// Add and Remove are idempotent: a member already added or already removed
// is success.
type Membership interface {
	View(ctx context.Context, endpoints []string) (View, error)
	Add(ctx context.Context, endpoints []string, peerURL string) error
	Remove(ctx context.Context, endpoints []string, id uint64) error
}

// Etcd is the Membership of etcd clusters, through one etcd client whose
// endpoints follow each call's. Its zero value is ready to use; Close it.
type Etcd struct {
	// Timeout bounds each request. Zero means 3 seconds.
	Timeout time.Duration

	mu  sync.Mutex // guards cli
	cli *clientv3.Client
}

var _ Membership = (*Etcd)(nil)

// client returns the client, created or pointed at endpoints.
func (e *Etcd) client(endpoints []string) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("operator: no endpoints")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cli == nil {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   endpoints,
			DialTimeout: e.timeout(),
			Logger:      zap.NewNop(),
		})
		if err != nil {
			return nil, err
		}
		e.cli = cli
		return cli, nil
	}
	if !slices.Equal(e.cli.Endpoints(), endpoints) {
		e.cli.SetEndpoints(endpoints...)
	}
	return e.cli, nil
}

func (e *Etcd) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return 3 * time.Second
}

// View lists the members and asks the members, in turn, who leads.
func (e *Etcd) View(ctx context.Context, endpoints []string) (View, error) {
	cli, err := e.client(endpoints)
	if err != nil {
		return View{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return View{}, fmt.Errorf("operator: member list: %w", err)
	}
	var v View
	for _, m := range resp.Members {
		rm := RaftMember{ID: m.ID, Name: m.Name}
		if len(m.PeerURLs) > 0 {
			rm.PeerURL = m.PeerURLs[0]
		}
		v.Members = append(v.Members, rm)
	}
	// A stopped member would hold each request for the whole timeout: give
	// each member a slice of it.
	for _, ep := range endpoints {
		sctx, cancel := context.WithTimeout(ctx, e.timeout()/4)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err == nil && st.Leader != 0 {
			v.Leader = st.Leader
			break
		}
	}
	return v, nil
}

// Add adds a voting member listening on peerURL; one already there is
// success.
func (e *Etcd) Add(ctx context.Context, endpoints []string, peerURL string) error {
	cli, err := e.client(endpoints)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	_, err = cli.MemberAdd(ctx, []string{peerURL})
	if err != nil && !errors.Is(err, rpctypes.ErrPeerURLExist) {
		return fmt.Errorf("operator: member add %s: %w", peerURL, err)
	}
	return nil
}

// Remove removes member id; one already gone is success.
func (e *Etcd) Remove(ctx context.Context, endpoints []string, id uint64) error {
	cli, err := e.client(endpoints)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	defer cancel()
	_, err = cli.MemberRemove(ctx, id)
	if err != nil && !errors.Is(err, rpctypes.ErrMemberNotFound) {
		return fmt.Errorf("operator: member remove %x: %w", id, err)
	}
	return nil
}

// Close closes the client.
func (e *Etcd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cli == nil {
		return nil
	}
	err := e.cli.Close()
	e.cli = nil
	return err
}
