package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema versions, in order: migrations[i] takes the
// schema from version i to version i+1. A released migration is never
// changed; a new schema change is a new entry. "{s}" stands for the quoted
// schema name.
var migrations = []string{
	// 1: documents, the revision counter, the change log and leases.
	`
CREATE TABLE {s}.revision (
	one       boolean PRIMARY KEY DEFAULT true CHECK (one),
	value     bigint NOT NULL, -- the revision of the newest write
	compacted bigint NOT NULL  -- changes up to this revision may be discarded
);
INSERT INTO {s}.revision (value, compacted) VALUES (0, 0);

CREATE TABLE {s}.documents (
	kind                  text NOT NULL,
	key                   text NOT NULL,
	uid                   text NOT NULL UNIQUE,
	revision              bigint NOT NULL,
	generation            bigint NOT NULL,
	created_at            timestamptz NOT NULL,
	updated_at            timestamptz NOT NULL,
	deletion_requested_at timestamptz,
	finalizers            text[],
	owners                jsonb,
	owner_uids            text[],
	labels                jsonb,
	spec                  bytea,
	status                bytea,
	PRIMARY KEY (kind, key)
);
CREATE INDEX documents_labels ON {s}.documents USING gin (labels);
CREATE INDEX documents_owner_uids ON {s}.documents USING gin (owner_uids);

-- One row per revision: the document as the change left it (as it was last
-- stored, for a removal).
CREATE TABLE {s}.changes (
	revision              bigint PRIMARY KEY,
	type                  smallint NOT NULL,
	kind                  text NOT NULL,
	key                   text NOT NULL,
	uid                   text NOT NULL,
	doc_revision          bigint NOT NULL,
	generation            bigint NOT NULL,
	created_at            timestamptz NOT NULL,
	updated_at            timestamptz NOT NULL,
	deletion_requested_at timestamptz,
	finalizers            text[],
	owners                jsonb,
	labels                jsonb,
	spec                  bytea,
	status                bytea
);
CREATE INDEX changes_kind_revision ON {s}.changes (kind, revision);

CREATE FUNCTION {s}.notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify(TG_TABLE_SCHEMA || '.changes', NEW.kind);
	RETURN NULL;
END $$;
CREATE TRIGGER notify_change AFTER INSERT ON {s}.changes
	FOR EACH ROW EXECUTE FUNCTION {s}.notify_change();

CREATE TABLE {s}.leases (
	name    text PRIMARY KEY,
	holder  text NOT NULL,
	fence   bigint NOT NULL,
	ttl_ns  bigint NOT NULL,
	expires timestamptz NOT NULL,
	held    boolean NOT NULL
);
`,
	// 2: an index for paged lists, in the byte order List sorts keys in.
	`
CREATE INDEX documents_kind_key ON {s}.documents (kind, key COLLATE "C");
`,
	// 3: revisions from a sequence, which no writer holds until it
	// commits; the counter row now keeps the settled watermark (every
	// revision up to it is logged or will never be) and the compaction
	// point. Changes of type 0 are gap markers: revisions a reader found
	// unused. One notification per statement, not per row.
	`
CREATE SEQUENCE {s}.revisions MINVALUE 0;
SELECT setval('{s}.revisions', (SELECT value FROM {s}.revision), true);
COMMENT ON COLUMN {s}.revision.value IS 'settled: every revision up to it is logged or never will be';
DROP TRIGGER notify_change ON {s}.changes;
DROP FUNCTION {s}.notify_change();
CREATE FUNCTION {s}.notify_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	kinds text[];
BEGIN
	SELECT array_agg(DISTINCT kind) INTO kinds FROM new WHERE type > 0;
	IF cardinality(kinds) = 1 THEN
		PERFORM pg_notify(TG_TABLE_SCHEMA || '.changes', kinds[1]);
	ELSIF cardinality(kinds) > 1 THEN
		PERFORM pg_notify(TG_TABLE_SCHEMA || '.changes', '');
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER notify_change AFTER INSERT ON {s}.changes
	REFERENCING NEW TABLE AS new FOR EACH STATEMENT EXECUTE FUNCTION {s}.notify_changes();
`,
	// 4: keys compare in byte order in the primary key itself, which
	// then serves lists too; the index of version 2 goes. With two
	// indexes on (kind, key), a planner without statistics (a fresh or
	// fast-growing table) rated a look-up through the byte-order index
	// (kind matched, key filtered) as cheap as the primary key, and chose
	// it: every look-up then read every document of its kind. Equality is
	// the same in both collations.
	`
DROP INDEX {s}.documents_kind_key;
ALTER TABLE {s}.documents ALTER COLUMN key TYPE text COLLATE "C";
`,
}

// SchemaVersion is the newest schema version this package knows: the number
// of migrations it carries.
const SchemaVersion = 4

// CheckSchema reports whether the schema named schema is at
// [SchemaVersion], without changing the database: it fails with
// [ErrSchemaOutdated] if the schema is missing or older, and with
// [ErrSchemaTooNew] if it is newer. [New] calls it instead of [Migrate] when
// Config.NoMigrate is set.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if !schemaPattern.MatchString(schema) {
		return fmt.Errorf("postgres: schema %q: want lower-case letters, digits and '_', at most 48 bytes", schema)
	}
	table := pgx.Identifier{schema, "schema_version"}.Sanitize()
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: check schema %q: %w", schema, err)
	}
	var version *int
	var err error
	if exists {
		err = pool.QueryRow(ctx, `SELECT max(version) FROM `+table).Scan(&version)
	}
	switch {
	case err != nil:
		return fmt.Errorf("postgres: check schema %q: %w", schema, err)
	case version == nil:
		return fmt.Errorf("%w: schema %q has no tend tables; run a program that migrates it (postgres.Migrate)", ErrSchemaOutdated, schema)
	case *version < SchemaVersion:
		return fmt.Errorf("%w: schema %q is at version %d, this program needs version %d; run a program that migrates it (postgres.Migrate)",
			ErrSchemaOutdated, schema, *version, SchemaVersion)
	case *version > SchemaVersion:
		return fmt.Errorf("%w: schema %q is at version %d, this program knows versions up to %d",
			ErrSchemaTooNew, schema, *version, SchemaVersion)
	}
	return nil
}

// Migrate brings the schema named schema up to [SchemaVersion], creating it
// if needed, in one transaction. It is idempotent and safe to run from
// several processes at once: they serialise on an advisory lock. A schema at
// a newer version than this package knows fails with [ErrSchemaTooNew] and is
// left untouched. [New] calls it.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return migrate(ctx, pool, schema, SchemaVersion)
}

// migrate brings the schema up to version target.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, target int) error {
	if !schemaPattern.MatchString(schema) {
		return fmt.Errorf("postgres: schema %q: want lower-case letters, digits and '_', at most 48 bytes", schema)
	}
	q := pgx.Identifier{schema}.Sanitize()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('tend.migrate.' || $1))`, schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+q); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+q+`.schema_version (
			one boolean PRIMARY KEY DEFAULT true CHECK (one),
			version integer NOT NULL)`); err != nil {
			return err
		}
		var version int
		err := tx.QueryRow(ctx, `SELECT version FROM `+q+`.schema_version`).Scan(&version)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			version = 0
		case err != nil:
			return err
		}
		if version > SchemaVersion {
			return fmt.Errorf("%w: schema %q is at version %d, this program knows versions up to %d",
				ErrSchemaTooNew, schema, version, SchemaVersion)
		}
		for v := version; v < target; v++ {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(migrations[v], "{s}", q)); err != nil {
				return fmt.Errorf("migration to version %d: %w", v+1, err)
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+q+`.schema_version (version) VALUES ($1)
			ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version`, max(version, target))
		return err
	})
	if err != nil && !errors.Is(err, ErrSchemaTooNew) {
		return fmt.Errorf("postgres: migrate schema %q: %w", schema, err)
	}
	return err
}
