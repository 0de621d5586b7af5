package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// Defaults of [Config].
const (
	// DefaultSchema is the schema used when Config.Schema is empty.
	DefaultSchema = "tend"
	// DefaultHistory is the number of revisions of change history kept when
	// Config.History is zero.
	DefaultHistory = 100_000
	// DefaultPollInterval is how long a watch waits for a notification
	// before it looks for changes anyway, when Config.PollInterval is zero.
	DefaultPollInterval = time.Second
)

// Errors of the backend, beside the store sentinels it returns.
var (
	// ErrUnavailable: the server could not be reached or the connection was
	// lost. A write that failed with it before its commit was sent wrote
	// nothing (such writes are retried before the error is returned); one
	// lost while committing may or may not have happened, and its revision
	// precondition makes a retry safe: a second attempt fails with
	// [store.ErrConflict] if the first one committed.
	ErrUnavailable = errors.New("postgres: server unavailable")
	// ErrSchemaTooNew: the database schema was migrated by a newer version of
	// this package than the running one. Upgrade the program; the backend
	// never writes to a schema it does not know.
	ErrSchemaTooNew = errors.New("postgres: schema is newer than this program")
	// ErrSchemaOutdated: Config.NoMigrate is set and the database schema is
	// missing or at an older version than this program needs. Run a program
	// that migrates it ([Migrate], or [New] without NoMigrate) first.
	ErrSchemaOutdated = errors.New("postgres: schema is missing or older than this program")
)

// Config configures a [Store]. One of Pool or URL is required;
// every other zero field means its documented default.
type Config struct {
	// Pool is the connection pool to use. The store does not close it.
	Pool *pgxpool.Pool
	// URL is a PostgreSQL connection string, used when Pool is nil. The
	// store then owns its pool and [Store.Close] closes it.
	URL string
	// Schema is the PostgreSQL schema holding the store's tables: lower-case
	// letters, digits and underscores, starting with a letter or underscore,
	// at most 48 bytes. Stores on different schemas of one database are
	// independent. Empty means [DefaultSchema].
	Schema string
	// Kinds are the kinds the store holds; each must pass
	// [store.ValidateKind]. More can be added with [Store.AddKinds] (a
	// manager's builders do), so empty is valid.
	Kinds []string
	// Logger receives the backend's warnings (a watch losing its
	// notification connection). Nil means no logs.
	Logger *zap.Logger
	// History is the number of revisions of change history kept for watches
	// to resume from; older changes are discarded as writes go on, and a
	// watch from before them fails with [store.ErrCompacted]. Zero means
	// [DefaultHistory].
	History int64
	// PollInterval is how long a watch waits for a change notification
	// before it queries for changes anyway, so a lost notification delays an
	// event by at most this long. Zero means [DefaultPollInterval].
	PollInterval time.Duration
	// NoMigrate makes [New] check the schema's version instead of
	// migrating it, for a program that must not change the database (an
	// operator's command-line tool, a read-only service): a missing or older
	// schema fails with [ErrSchemaOutdated], a newer one with
	// [ErrSchemaTooNew]. False means New migrates (see [Migrate]).
	NoMigrate bool
}

// Store is a [store.Backend] on PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool      *pgxpool.Pool
	ownPool   bool
	schema    string
	channel   string                   // the NOTIFY channel of the schema's changes
	kinds     atomic.Pointer[[]string] // sorted; replaced, never changed, by AddKinds under kindsMu
	kindsMu   sync.Mutex               // serialises AddKinds
	log       *zap.Logger
	history   int64
	poll      time.Duration
	sql       statements
	connectTo *pgx.ConnConfig // for the watches' notification connections
	groups    groups          // the group commit of status writes
}

var (
	_ store.Backend     = (*Store)(nil)
	_ backend.Compactor = (*Store)(nil)
)

var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

// New connects to the database, applies the schema migrations this version
// knows (see [Migrate]; with Config.NoMigrate it only checks the version)
// and returns the store. It starts no goroutine.
func New(ctx context.Context, cfg Config) (*Store, error) {
	s := &Store{
		schema:  cfg.Schema,
		log:     cfg.Logger,
		history: cfg.History,
		poll:    cfg.PollInterval,
	}
	if s.schema == "" {
		s.schema = DefaultSchema
	}
	if !schemaPattern.MatchString(s.schema) {
		return nil, fmt.Errorf("postgres: Config.Schema %q: want lower-case letters, digits and '_', at most 48 bytes", s.schema)
	}
	switch {
	case s.history < 0:
		return nil, fmt.Errorf("postgres: Config.History %d is negative", s.history)
	case s.history == 0:
		s.history = DefaultHistory
	}
	switch {
	case s.poll < 0:
		return nil, fmt.Errorf("postgres: Config.PollInterval %v is negative", s.poll)
	case s.poll == 0:
		s.poll = DefaultPollInterval
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.log = s.log.Named("postgres").With(zap.String("schema", s.schema))
	for i, k := range cfg.Kinds {
		if err := store.ValidateKind(k); err != nil {
			return nil, fmt.Errorf("postgres: Config.Kinds: %w", err)
		}
		if slices.Contains(cfg.Kinds[:i], k) {
			return nil, fmt.Errorf("postgres: Config.Kinds: %q listed twice", k)
		}
	}
	kinds := slices.Sorted(slices.Values(cfg.Kinds))
	s.kinds.Store(&kinds)
	s.channel = s.schema + ".changes"
	s.sql = newStatements(s.schema)

	switch {
	case cfg.Pool != nil:
		s.pool = cfg.Pool
	case cfg.URL != "":
		pool, err := pgxpool.New(ctx, cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		s.pool, s.ownPool = pool, true
	default:
		return nil, errors.New("postgres: Config.Pool and Config.URL are both empty")
	}
	s.connectTo = s.pool.Config().ConnConfig.Copy()
	prepare := Migrate
	if cfg.NoMigrate {
		prepare = CheckSchema
	}
	if err := prepare(ctx, s.pool, s.schema); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the store's pool if the store opened it from Config.URL.
// Watches hold their own connections: close them with [store.Watch.Close].
func (s *Store) Close() {
	if s.ownPool {
		s.pool.Close()
	}
}

// Kinds returns the kinds the store holds, sorted.
func (s *Store) Kinds() []string { return slices.Clone(*s.kinds.Load()) }

// AddKinds adds kinds to the store; a kind it holds already is left as it
// is. Each must pass [store.ValidateKind]. Documents of every kind share the
// store's tables, so adding a kind writes nothing; every replica sharing
// the schema must hold the kinds it serves. Safe to call while the store is
// in use.
func (s *Store) AddKinds(kinds ...string) error {
	for _, k := range kinds {
		if err := store.ValidateKind(k); err != nil {
			return fmt.Errorf("postgres: AddKinds: %w", err)
		}
	}
	s.kindsMu.Lock()
	defer s.kindsMu.Unlock()
	next := slices.Clone(*s.kinds.Load())
	for _, k := range kinds {
		if !slices.Contains(next, k) {
			next = append(next, k)
		}
	}
	slices.Sort(next)
	s.kinds.Store(&next)
	return nil
}

// checkKind returns an error naming the document if kind is not one of the
// store's kinds, or if key (when checkKey) is malformed.
func (s *Store) checkKind(op, kind, key string, checkKey bool) error {
	kinds := *s.kinds.Load()
	if _, ok := slices.BinarySearch(kinds, kind); !ok {
		return backend.UnknownKind(op, kind, key, kinds)
	}
	if checkKey {
		if err := store.ValidateKey(key); err != nil {
			return &store.Error{Op: op, Kind: kind, Key: key, Err: err}
		}
	}
	return nil
}

// maxAttempts bounds how often a transaction is tried when it fails in a way
// that wrote nothing: a deadlock, a serialization failure, or a connection
// lost before the commit was sent.
const maxAttempts = 3

// errCommitUnknown marks a connection lost while committing.
var errCommitUnknown = errors.New("connection lost while committing: the write may or may not have happened")

// inTx runs fn in a read-committed transaction that first checks the fence
// ctx carries, and retries it when it failed without writing. Errors are
// translated for op on kind and key.
func (s *Store) inTx(ctx context.Context, op, kind, key string, fn func(pgx.Tx) error) error {
	var err error
	for range maxAttempts {
		if err = s.tryTx(ctx, op, kind, key, fn); !retryable(ctx, err) {
			break
		}
	}
	return s.translate(ctx, op, kind, key, err)
}

func (s *Store) tryTx(ctx context.Context, op, kind, key string, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	if f, ok := store.FenceFrom(ctx); ok {
		var held bool
		err := tx.QueryRow(ctx, s.sql.fence, f.Lease, f.Token).Scan(&held)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if !held {
			return backend.Fenced(op, kind, key, f)
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		if isConnectionError(err) {
			return fmt.Errorf("%w: %w", errCommitUnknown, err)
		}
		return err
	}
	return nil
}

// retryable reports whether err came from a transaction that wrote nothing
// and may succeed if tried again.
func retryable(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, errCommitUnknown) {
		return false
	}
	var se *store.Error
	if errors.As(err, &se) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01" || lostRevision(pe)) {
		return true
	}
	return isConnectionError(err)
}

// lostRevision reports whether pe is a write's failure to log its change at
// the revision it took because a reader settling the log marked that
// revision a gap first (see statements.fillGaps): the write did nothing and
// is retried at a new revision.
func lostRevision(pe *pgconn.PgError) bool {
	return pe.Code == "23505" && pe.ConstraintName == "changes_pkey"
}

// isConnectionError reports whether err means the connection failed rather
// than the statement.
func isConnectionError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08 is connection exception; 57P01-57P03 are the server
		// shutting down or terminating the session.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var (
		transport interface{ SafeToRetry() bool } // pgconn's errors of the connection itself
		netErr    net.Error
		connErr   *pgconn.ConnectError
	)
	return errors.As(err, &transport) || errors.As(err, &netErr) || errors.As(err, &connErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// translate turns a driver error into a store error for op on kind and key.
// Store errors and context errors are returned as they are.
func (s *Store) translate(ctx context.Context, op, kind, key string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	var se *store.Error
	if errors.As(err, &se) {
		return err
	}
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && lostRevision(pe):
		err = fmt.Errorf("%w: %v", store.ErrConflict, err)
	case errors.As(err, &pe) && pe.Code == "23505": // unique_violation
		err = fmt.Errorf("%w: %v", store.ErrAlreadyExists, err)
	case errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01"):
		err = fmt.Errorf("%w: %v", store.ErrConflict, err)
	case isConnectionError(err):
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return &store.Error{Op: op, Kind: kind, Key: key, Err: err}
}
