package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// Leases live in one table with their holder, fence and expiry, judged by
// the server's clock (now()). A lease row outlives its holders, so fences
// keep growing after a release. Each operation is one statement whose WHERE
// clause is the compare-and-set.

// AcquireLease takes the named lease for holder, or renews it if holder has
// it.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	const op = "acquire lease"
	if err := backend.CheckLease(ctx, op, name, holder, ttl); err != nil {
		return store.Lease{}, err
	}
	l, err := s.leaseRow(ctx, s.sql.acquire, name, holder, int64(ttl))
	if !errors.Is(err, pgx.ErrNoRows) {
		return l, s.translate(ctx, op, "", name, err)
	}
	var other string
	var until time.Time
	if err := s.pool.QueryRow(ctx, s.sql.leaseHolder, name).Scan(&other, &until); err != nil {
		return store.Lease{}, s.translate(ctx, op, "", name, err)
	}
	return store.Lease{}, backend.LeaseHeld(op, name, other, until)
}

// RenewLease extends a lease its holder still has.
func (s *Store) RenewLease(ctx context.Context, held store.Lease) (store.Lease, error) {
	const op = "renew lease"
	if err := backend.CheckLease(ctx, op, held.Name, held.Holder, held.TTL); err != nil {
		return store.Lease{}, err
	}
	l, err := s.leaseRow(ctx, s.sql.renew, held.Name, held.Holder, held.Fence, int64(held.TTL))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, backend.LeaseLost(op, held)
	}
	return l, s.translate(ctx, op, "", held.Name, err)
}

// ReleaseLease gives up a lease its holder still has.
func (s *Store) ReleaseLease(ctx context.Context, held store.Lease) error {
	const op = "release lease"
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	for range maxAttempts {
		if _, err = s.pool.Exec(ctx, s.sql.release, held.Name, held.Holder, held.Fence); !retryable(ctx, err) {
			break
		}
	}
	return s.translate(ctx, op, "", held.Name, err)
}

// ListLeases returns the unexpired leases whose names start with prefix.
func (s *Store) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	const op = "list leases"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Lease
	var err error
	for range maxAttempts {
		out, err = s.listLeases(ctx, prefix)
		if !retryable(ctx, err) {
			break
		}
	}
	if err != nil {
		return nil, s.translate(ctx, op, "", prefix, err)
	}
	return out, nil
}

func (s *Store) listLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	rows, err := s.pool.Query(ctx, s.sql.lst, prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Lease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// leaseRow runs a lease statement returning one lease, retrying it when it
// failed without effect.
func (s *Store) leaseRow(ctx context.Context, query string, args ...any) (store.Lease, error) {
	var l store.Lease
	var err error
	for range maxAttempts {
		if l, err = scanLease(s.pool.QueryRow(ctx, query, args...)); !retryable(ctx, err) {
			break
		}
	}
	return l, err
}

func scanLease(row pgx.Row) (store.Lease, error) {
	var l store.Lease
	var ttl int64
	err := row.Scan(&l.Name, &l.Holder, &l.Fence, &ttl, &l.Expires)
	l.TTL = time.Duration(ttl)
	return l, err
}
