package infra

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresConfig configures a [Postgres].
type PostgresConfig struct {
	// Pool connects to the server as a role that may create databases and
	// roles (CREATEDB and CREATEROLE, or a superuser). Required; Postgres
	// does not close it.
	Pool *pgxpool.Pool
}

// Postgres is [Databases] on a PostgreSQL server: each [Database] is a
// database owned by a login role named after its User. It is safe for
// concurrent use.
type Postgres struct {
	pool *pgxpool.Pool
}

var _ Databases = (*Postgres)(nil)

// NewPostgres returns a Postgres on cfg.Pool.
func NewPostgres(cfg PostgresConfig) (*Postgres, error) {
	if cfg.Pool == nil {
		return nil, fmt.Errorf("%w: PostgresConfig.Pool is required", ErrInvalid)
	}
	return &Postgres{pool: cfg.Pool}, nil
}

// pgName is what Postgres accepts as a database or role name: the names
// PostgreSQL would accept unquoted, folded to lower case, at most 63 bytes.
// Names are still quoted in SQL, so reserved words are safe.
var pgName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func validateNames(db Database) error {
	for _, n := range []string{db.Name, db.User} {
		if !pgName.MatchString(n) {
			return fmt.Errorf("%w: database %+v: %q is not a lower-case PostgreSQL identifier", ErrInvalid, db, n)
		}
	}
	return nil
}

// SQLSTATE codes of the errors that mean "it exists already". Concurrent
// creations of one database can also fail on the catalog's unique index.
const (
	duplicateObject   = "42710" // CREATE ROLE of an existing role
	duplicateDatabase = "42P04" // CREATE DATABASE of an existing database
	uniqueViolation   = "23505" // concurrent CREATE of one name
)

// EnsureDatabase implements [Databases]: it creates the role db.User
// (LOGIN) and the database db.Name owned by it, each unless it exists.
func (p *Postgres) EnsureDatabase(ctx context.Context, db Database) error {
	if err := validateNames(db); err != nil {
		return err
	}
	user, name := pgx.Identifier{db.User}.Sanitize(), pgx.Identifier{db.Name}.Sanitize()
	if err := p.create(ctx, "CREATE ROLE "+user+" LOGIN", duplicateObject); err != nil {
		return fmt.Errorf("infra: create role %s: %w", db.User, err)
	}
	if err := p.create(ctx, "CREATE DATABASE "+name+" OWNER "+user, duplicateDatabase); err != nil {
		return fmt.Errorf("infra: create database %s: %w", db.Name, err)
	}
	return nil
}

// create runs a CREATE statement, treating "exists already" as success.
func (p *Postgres) create(ctx context.Context, sql, exists string) error {
	_, err := p.pool.Exec(ctx, sql)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == exists || pgErr.Code == uniqueViolation) {
		return nil
	}
	return err
}

// DropDatabase implements [Databases]: it drops the database, ending the
// sessions still connected to it, then the role.
func (p *Postgres) DropDatabase(ctx context.Context, db Database) error {
	if err := validateNames(db); err != nil {
		return err
	}
	if _, err := p.pool.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("infra: drop database %s: %w", db.Name, err)
	}
	if _, err := p.pool.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{db.User}.Sanitize()); err != nil {
		return fmt.Errorf("infra: drop role %s: %w", db.User, err)
	}
	return nil
}

// DatabaseExists implements [Databases].
func (p *Postgres) DatabaseExists(ctx context.Context, db Database) (bool, error) {
	if err := validateNames(db); err != nil {
		return false, err
	}
	var ok bool
	err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)
		OR EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2)`, db.Name, db.User).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("infra: look up database %s: %w", db.Name, err)
	}
	return ok, nil
}
