package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// leaseRecord is the value of a lease key. The key is attached to an etcd
// lease of TTL seconds, so etcd deletes it when the lease expires.
type leaseRecord struct {
	Holder string `json:"holder"`
	TTL    int64  `json:"ttl"`
}

// revokeTimeout bounds a best-effort revocation, which runs even when the
// caller's context is done.
const revokeTimeout = 5 * time.Second

// errGone says the etcd lease behind a lease key expired or was replaced
// while a request was on its way.
var errGone = errors.New("etcd lease gone")

// ttlSeconds rounds ttl up to the whole seconds etcd leases are granted in.
func ttlSeconds(ttl time.Duration) int64 {
	return max(1, int64((ttl+time.Second-1)/time.Second))
}

// AcquireLease takes the named lease for holder, or renews it if holder has
// it. A new holder's lease is a key attached to a fresh etcd lease of ttl
// rounded up to whole seconds (etcd may grant more; the returned TTL says
// what it granted); its fence is the key's create revision, which grows
// with every new holder because etcd revisions do. Expiry is etcd's: the
// key disappears when its etcd lease lapses.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	const op = "acquire lease"
	if err := backend.CheckLease(ctx, op, name, holder, ttl); err != nil {
		return store.Lease{}, err
	}
	key := s.keys.lease(name)
	for {
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			return store.Lease{}, s.fail(ctx, op, "", name, err)
		}
		if len(resp.Kvs) == 1 {
			kv := resp.Kvs[0]
			rec, err := decodeLease(kv)
			if err != nil {
				return store.Lease{}, &store.Error{Op: op, Key: name, Err: err}
			}
			if rec.Holder != holder {
				return store.Lease{}, backend.LeaseHeld(op, name, rec.Holder, time.Time{})
			}
			l, err := s.extend(ctx, op, name, kv, rec, ttl)
			if errors.Is(err, errGone) {
				// It lapsed just now: make sure the key is gone and take
				// it afresh.
				s.revoke(ctx, clientv3.LeaseID(kv.Lease))
				continue
			}
			return l, err
		}
		start := time.Now()
		grant, err := s.cli.Grant(ctx, ttlSeconds(ttl))
		if err != nil {
			return store.Lease{}, s.fail(ctx, op, "", name, err)
		}
		val := encodeLease(leaseRecord{Holder: holder, TTL: grant.TTL})
		txn, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, val, clientv3.WithLease(grant.ID))).
			Commit()
		if err != nil || !txn.Succeeded {
			s.revoke(ctx, grant.ID)
		}
		if err != nil {
			return store.Lease{}, s.fail(ctx, op, "", name, err)
		}
		if !txn.Succeeded {
			continue // another holder came first: the next read says who
		}
		return leaseOf(name, holder, txn.Header.Revision, grant.TTL, start), nil
	}
}

// RenewLease extends a lease its holder still has: one etcd keep-alive
// when the TTL is unchanged.
func (s *Store) RenewLease(ctx context.Context, held store.Lease) (store.Lease, error) {
	const op = "renew lease"
	if err := backend.CheckLease(ctx, op, held.Name, held.Holder, held.TTL); err != nil {
		return store.Lease{}, err
	}
	kv, rec, err := s.heldKey(ctx, op, held)
	if err != nil {
		return store.Lease{}, err
	}
	l, err := s.extend(ctx, op, held.Name, kv, rec, held.TTL)
	if errors.Is(err, errGone) {
		return store.Lease{}, backend.LeaseLost(op, held)
	}
	return l, err
}

// ReleaseLease revokes the etcd lease behind a lease its holder still has,
// which deletes the lease key at once.
func (s *Store) ReleaseLease(ctx context.Context, held store.Lease) error {
	const op = "release lease"
	if err := ctx.Err(); err != nil {
		return err
	}
	kv, _, err := s.heldKey(ctx, op, held)
	if errors.Is(err, store.ErrLeaseLost) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := s.cli.Revoke(ctx, clientv3.LeaseID(kv.Lease)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return s.fail(ctx, op, "", held.Name, err)
	}
	return nil
}

// ListLeases returns the leases whose names start with prefix and whose
// etcd leases have time left, ordered by name.
func (s *Store) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	const op = "list leases"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.keys.lease(prefix), clientv3.WithPrefix())
	if err != nil {
		return nil, s.fail(ctx, op, "", prefix, err)
	}
	var out []store.Lease
	for _, kv := range resp.Kvs {
		name := s.keys.leaseName(string(kv.Key))
		rec, err := decodeLease(kv)
		if err != nil {
			return nil, &store.Error{Op: op, Key: name, Err: err}
		}
		start := time.Now()
		ttl, err := s.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			continue
		}
		if err != nil {
			return nil, s.fail(ctx, op, "", name, err)
		}
		if ttl.TTL <= 0 {
			continue
		}
		l := leaseOf(name, rec.Holder, kv.CreateRevision, ttl.GrantedTTL, start)
		l.Expires = start.Add(time.Duration(ttl.TTL) * time.Second)
		out = append(out, l)
	}
	return out, nil
}

// heldKey reads the key of a lease and checks that held's holder still has
// it at held's fence.
func (s *Store) heldKey(ctx context.Context, op string, held store.Lease) (*mvccpb.KeyValue, leaseRecord, error) {
	if store.ValidateKey(held.Name) != nil {
		return nil, leaseRecord{}, backend.LeaseLost(op, held)
	}
	resp, err := s.cli.Get(ctx, s.keys.lease(held.Name))
	if err != nil {
		return nil, leaseRecord{}, s.fail(ctx, op, "", held.Name, err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != held.Fence {
		return nil, leaseRecord{}, backend.LeaseLost(op, held)
	}
	rec, err := decodeLease(resp.Kvs[0])
	if err != nil {
		return nil, leaseRecord{}, &store.Error{Op: op, Key: held.Name, Err: err}
	}
	if rec.Holder != held.Holder {
		return nil, leaseRecord{}, backend.LeaseLost(op, held)
	}
	return resp.Kvs[0], rec, nil
}

// extend renews the etcd lease behind kv for ttl: a keep-alive when ttl
// rounds to the granted seconds, else a fresh etcd lease the key moves to
// (its create revision, so the fence, stays). It returns errGone when the
// etcd lease lapsed or the key changed on the way.
func (s *Store) extend(ctx context.Context, op, name string, kv *mvccpb.KeyValue, rec leaseRecord, ttl time.Duration) (store.Lease, error) {
	start := time.Now()
	old := clientv3.LeaseID(kv.Lease)
	if ttlSeconds(ttl) == rec.TTL {
		resp, err := s.cli.KeepAliveOnce(ctx, old)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return store.Lease{}, errGone
		}
		if err != nil {
			return store.Lease{}, s.fail(ctx, op, "", name, err)
		}
		return leaseOf(name, rec.Holder, kv.CreateRevision, resp.TTL, start), nil
	}
	grant, err := s.cli.Grant(ctx, ttlSeconds(ttl))
	if err != nil {
		return store.Lease{}, s.fail(ctx, op, "", name, err)
	}
	key := string(kv.Key)
	txn, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", kv.CreateRevision)).
		Then(clientv3.OpPut(key, encodeLease(leaseRecord{Holder: rec.Holder, TTL: grant.TTL}), clientv3.WithLease(grant.ID))).
		Commit()
	switch {
	case err != nil:
		s.revoke(ctx, grant.ID)
		return store.Lease{}, s.fail(ctx, op, "", name, err)
	case !txn.Succeeded:
		s.revoke(ctx, grant.ID)
		return store.Lease{}, errGone
	}
	s.revoke(ctx, old) // now holds no key
	return leaseOf(name, rec.Holder, kv.CreateRevision, grant.TTL, start), nil
}

// revoke revokes an etcd lease, best effort: one that is left expires on
// its own.
func (s *Store) revoke(ctx context.Context, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), revokeTimeout)
	defer cancel()
	if _, err := s.cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		s.log.Debug("revoke etcd lease", zap.Int64("lease", int64(id)), zap.Error(err))
	}
}

func leaseOf(name, holder string, fence, ttlSeconds int64, start time.Time) store.Lease {
	ttl := time.Duration(ttlSeconds) * time.Second
	return store.Lease{Name: name, Holder: holder, Fence: fence, TTL: ttl, Expires: start.Add(ttl)}
}

func encodeLease(r leaseRecord) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic("etcd: encode lease: " + err.Error())
	}
	return string(b)
}

func decodeLease(kv *mvccpb.KeyValue) (leaseRecord, error) {
	var r leaseRecord
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return leaseRecord{}, fmt.Errorf("%w: lease %q: %w", store.ErrDecode, kv.Key, err)
	}
	return r, nil
}
