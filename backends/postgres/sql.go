package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tendhq/tend/store"
)

// docCols are the columns of a stored document, in the order scanDoc reads
// them. The change log has the same columns, with doc_revision for revision.
const docCols = `kind, key, uid, revision, generation, created_at, updated_at, deletion_requested_at,
	finalizers, owners, labels, spec, status`

// statements are the store's SQL, with the schema name filled in. Every value
// is a parameter; only the schema, checked by [New], is part of the text.
type statements struct {
	get, lock, fence                          string
	listRevision, listPrefix                  string
	create, put, remove, removeQuiet          string
	updateStatuses                            string
	compactCheck, compact, currentCompaction  string
	changes, fillGaps, settle                 string
	grown, analyze                            string
	acquire, leaseHolder, renew, release, lst string
}

// bump takes the next revision from the sequence. No writer holds the
// sequence until it commits, so revisions may commit out of order and skip
// (a rolled-back write's revision is never logged); readers see the log in
// order by settling gaps (see statements.fillGaps).
const bump = `rev AS (SELECT nextval('{s}.revisions') AS value)`

// logChange records the document a write returned in d as change rev.
const logChange = `c AS (INSERT INTO {s}.changes (revision, type, kind, key, uid, doc_revision, generation, created_at,
	updated_at, deletion_requested_at, finalizers, owners, labels, spec, status)
	SELECT (SELECT value FROM rev), %s, ` + "d.kind, d.key, d.uid, d.revision, d.generation, d.created_at, d.updated_at," +
	` d.deletion_requested_at, d.finalizers, d.owners, d.labels, d.spec, d.status FROM d)`

func newStatements(schema string) statements {
	q := pgx.Identifier{schema}.Sanitize()
	sub := func(s string) string { return strings.ReplaceAll(s, "{s}", q) }
	return statements{
		get:  sub(`SELECT ` + docCols + ` FROM {s}.documents WHERE kind = $1 AND key = $2`),
		lock: sub(`SELECT ` + docCols + ` FROM {s}.documents WHERE kind = $1 AND key = $2 FOR UPDATE`),
		// FOR SHARE keeps the lease from passing to another holder until
		// the write commits.
		fence: sub(`SELECT true FROM {s}.leases
			WHERE name = $1 AND fence = $2 AND held AND expires > now() FOR SHARE`),

		listPrefix: sub(`SELECT ` + docCols + ` FROM {s}.documents WHERE kind = $1`),

		create: sub(`WITH ` + bump + `,
			d AS (INSERT INTO {s}.documents (kind, key, uid, revision, generation, created_at, updated_at,
					finalizers, owners, owner_uids, labels, spec)
				VALUES ($1, $2, $3, (SELECT value FROM rev), 1, now(), now(), $4, $5, $6, $7, $8)
				RETURNING ` + docCols + `),
			` + fmt.Sprintf(logChange, "1") + `
			SELECT ` + docCols + ` FROM d`),
		// put writes every mutable column; $11 is the event type logged.
		put: sub(`WITH ` + bump + `,
			d AS (UPDATE {s}.documents SET revision = (SELECT value FROM rev), updated_at = now(), generation = $3,
					deletion_requested_at = CASE WHEN $4 THEN now() ELSE deletion_requested_at END,
					finalizers = $5, owners = $6, owner_uids = $7, labels = $8, spec = $9, status = $10
				WHERE kind = $1 AND key = $2
				RETURNING ` + docCols + `),
			` + fmt.Sprintf(logChange, "$11::smallint") + `
			SELECT ` + docCols + ` FROM d`),
		// remove deletes the document and logs it as last stored.
		remove: sub(`WITH ` + bump + `,
			d AS (DELETE FROM {s}.documents WHERE kind = $1 AND key = $2 RETURNING ` + docCols + `),
			` + fmt.Sprintf(logChange, "3") + `
			SELECT rev.value FROM rev`),
		// updateStatuses is a batch of status writes in one statement,
		// and so one transaction. Its input is arrays, one element per
		// write: $1 the write's number, $2 kind, $3 key, $4 the revision it
		// expects, $5 the status, $6 the fence's lease (NULL for none) and
		// $7 the fence. It locks the fences' leases, then the documents in
		// key order (so concurrent batches cannot deadlock), and writes
		// each document whose lease is held, whose stored revision is the
		// expected one and whose stored status differs. It returns a row
		// per write: (number, lease held, written, found, the document as
		// written or else as stored). One write's failed precondition
		// never affects another's.
		updateStatuses: sub(`WITH
			input AS (SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::bigint[], $5::bytea[], $6::text[], $7::bigint[])
				AS i(n, kind, key, rev, status, lease, fence)),
			fences AS (SELECT l.name, l.fence FROM {s}.leases l
				WHERE (l.name, l.fence) IN (SELECT lease, fence FROM input WHERE lease IS NOT NULL)
					AND l.held AND l.expires > now() FOR SHARE),
			h AS (SELECT i.*, (i.lease IS NULL OR EXISTS (SELECT FROM fences f WHERE f.name = i.lease AND f.fence = i.fence)) AS held
				FROM input i),
			cur AS (SELECT h.n, ` + qualified("c") + ` FROM h JOIN {s}.documents c ON c.kind = h.kind AND c.key = h.key
				ORDER BY c.kind, c.key FOR UPDATE OF c),
			ok AS (SELECT h.n FROM h JOIN cur c ON c.n = h.n
				WHERE h.held AND c.revision = h.rev AND c.status IS DISTINCT FROM h.status),
			d AS (UPDATE {s}.documents d SET revision = nextval('{s}.revisions'), updated_at = now(), status = h.status
				FROM h WHERE h.n IN (SELECT n FROM ok) AND d.kind = h.kind AND d.key = h.key
				RETURNING h.n, ` + qualified("d") + `),
			logged AS (INSERT INTO {s}.changes (revision, type, kind, key, uid, doc_revision, generation, created_at,
					updated_at, deletion_requested_at, finalizers, owners, labels, spec, status)
				SELECT d.revision, 2, d.kind, d.key, d.uid, d.revision, d.generation, d.created_at, d.updated_at,
					d.deletion_requested_at, d.finalizers, d.owners, d.labels, d.spec, d.status FROM d ORDER BY d.revision)
			SELECT h.n, h.held, true, true, ` + qualified("d") + ` FROM h JOIN d ON d.n = h.n
			UNION ALL
			SELECT h.n, h.held, false, true, ` + qualified("c") + ` FROM h JOIN cur c ON c.n = h.n
				WHERE h.n NOT IN (SELECT n FROM d)
			UNION ALL
			SELECT h.n, h.held, false, false, ` + missingDoc + ` FROM h WHERE h.n NOT IN (SELECT n FROM cur)`),
		// removeQuiet deletes a document whose removal put already logged.
		removeQuiet: sub(`DELETE FROM {s}.documents WHERE kind = $1 AND key = $2`),

		compactCheck: sub(`SELECT last_value FROM {s}.revisions`),
		// compact discards the changes up to $1, which settle has settled.
		compact: sub(`WITH gone AS (DELETE FROM {s}.changes WHERE revision <= $1)
			UPDATE {s}.revision SET compacted = greatest(compacted, $1), value = greatest(value, $1)`),
		currentCompaction: sub(`SELECT compacted FROM {s}.revision`),
		// changes reads a window of at most $3 logged revisions after $2,
		// of every kind, and returns a first row (at revision 0) holding
		// the compaction point and the end of the window's gapless prefix
		// (safe: every revision after $2 up to it is logged), then the
		// changes of kind $1 in the window, in order. The window's last
		// revision rides in the first row's doc_revision, and how many
		// revisions it holds in its generation.
		changes: sub(`WITH
			win AS (SELECT revision, type, kind FROM {s}.changes WHERE revision > $2 ORDER BY revision LIMIT $3),
			safe AS (SELECT $2::bigint + count(*) AS value FROM
				(SELECT revision - row_number() OVER (ORDER BY revision) AS off FROM win) x WHERE off = $2)
			SELECT (SELECT compacted FROM {s}.revision), (SELECT value FROM safe), 0::bigint, 0::smallint,
				'', '', '', (SELECT coalesce(max(revision), $2) FROM win), (SELECT count(*) FROM win), now(), now(),
				NULL::timestamptz, NULL::text[], NULL::jsonb, NULL::jsonb, NULL::bytea, NULL::bytea
			UNION ALL
			(SELECT 0, 0, c.revision, c.type, ` + strings.Replace(qualified("c"), "c.revision", "c.doc_revision", 1) + `
				FROM {s}.changes c
				WHERE c.revision IN (SELECT revision FROM win WHERE kind = $1 AND type > 0)
				ORDER BY c.revision)`),
		// fillGaps logs a gap marker (type 0) at every revision from $1 to
		// $2 that has no change. A revision whose write is still in flight
		// has its change row inserted already (a write takes its revision
		// and logs it in one statement), so the marker waits for that write
		// to commit or roll back; a write that takes a revision the marker
		// claimed first fails on the primary key, wrote nothing, and is
		// retried. Once it returns, every revision up to $2 is logged for
		// good, in order: the gaps are settled.
		fillGaps: sub(`INSERT INTO {s}.changes (revision, type, kind, key, uid, doc_revision, generation, created_at, updated_at)
			SELECT g, 0, '', '', '', 0, 0, now(), now() FROM generate_series($1::bigint, $2::bigint) g
			ON CONFLICT (revision) DO NOTHING`),
		// settle fills the gaps up to $1 and records it as settled, so
		// List looks for gaps only after it.
		settle: sub(`WITH f AS (INSERT INTO {s}.changes (revision, type, kind, key, uid, doc_revision, generation, created_at, updated_at)
				SELECT g, 0, '', '', '', 0, 0, now(), now()
				FROM generate_series((SELECT value FROM {s}.revision) + 1, $1::bigint) g
				ON CONFLICT (revision) DO NOTHING)
			UPDATE {s}.revision SET value = greatest(value, $1)`),
		// grown reports whether the documents table has twice the pages
		// its statistics last counted, or has never been analyzed and
		// has more than 8 pages (see Store.analyzeIfGrown).
		grown: sub(`SELECT pg_relation_size(c.oid) / current_setting('block_size')::bigint > greatest(2 * c.relpages, 8)
			FROM pg_class c WHERE c.oid = '{s}.documents'::regclass`),
		analyze: sub(`ANALYZE {s}.documents`),
		// listRevision is the revision of a List's snapshot: the end of the
		// gapless prefix of the log after the settled watermark, and the
		// newest revision logged. Where they differ, a write below the
		// newest is still in flight or left a gap.
		listRevision: sub(`SELECT r.value + (SELECT count(*) FROM
				(SELECT revision - row_number() OVER (ORDER BY revision) AS off FROM {s}.changes WHERE revision > r.value) x
				WHERE off = r.value),
			greatest(r.value, (SELECT max(revision) FROM {s}.changes))
			FROM {s}.revision r`),

		// acquire takes a free or expired lease, or renews the holder's own.
		acquire: sub(`INSERT INTO {s}.leases AS l (name, holder, fence, ttl_ns, expires, held)
			VALUES ($1, $2, 1, $3::bigint, now() + ($3::bigint / 1000) * interval '1 microsecond', true)
			ON CONFLICT (name) DO UPDATE SET
				fence = CASE WHEN l.held AND l.holder = EXCLUDED.holder THEN l.fence ELSE l.fence + 1 END,
				holder = EXCLUDED.holder, ttl_ns = EXCLUDED.ttl_ns, expires = EXCLUDED.expires, held = true
			WHERE (l.held AND l.holder = EXCLUDED.holder) OR NOT l.held OR l.expires <= now()
			RETURNING name, holder, fence, ttl_ns, expires`),
		leaseHolder: sub(`SELECT holder, expires FROM {s}.leases WHERE name = $1`),
		renew: sub(`UPDATE {s}.leases SET ttl_ns = $4::bigint, expires = now() + ($4::bigint / 1000) * interval '1 microsecond'
			WHERE name = $1 AND holder = $2 AND fence = $3 AND held
			RETURNING name, holder, fence, ttl_ns, expires`),
		release: sub(`UPDATE {s}.leases SET held = false WHERE name = $1 AND holder = $2 AND fence = $3 AND held`),
		lst: sub(`SELECT name, holder, fence, ttl_ns, expires FROM {s}.leases
			WHERE held AND expires > now() AND starts_with(name, $1) ORDER BY name COLLATE "C"`),
	}
}

// qualified returns docCols, each prefixed with the table alias a.
func qualified(a string) string {
	cols := strings.Split(docCols, ",")
	for i, c := range cols {
		cols[i] = a + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// missingDoc stands for docCols in a result row that has no document.
const missingDoc = `'', '', '', 0::bigint, 0::bigint, now(), now(), NULL::timestamptz, NULL::text[], NULL::jsonb,
	NULL::jsonb, NULL::bytea, NULL::bytea`

// scanDoc reads the columns of docCols, after the values in before.
func scanDoc(row pgx.Row, before ...any) (store.Document, error) {
	var (
		d              store.Document
		m              = &d.Meta
		deletion       *time.Time
		owners, labels []byte
	)
	dest := append(before, &m.Kind, &m.Key, &m.UID, &m.Revision, &m.Generation, &m.CreatedAt, &m.UpdatedAt,
		&deletion, &m.Finalizers, &owners, &labels, &d.Spec, &d.Status)
	if err := row.Scan(dest...); err != nil {
		return store.Document{}, err
	}
	if deletion != nil {
		m.DeletionRequestedAt = *deletion
	}
	if len(owners) > 0 {
		if err := json.Unmarshal(owners, &m.Owners); err != nil {
			return store.Document{}, fmt.Errorf("owners of %s %q: %w", m.Kind, m.Key, err)
		}
	}
	if len(labels) > 0 {
		if err := json.Unmarshal(labels, &m.Labels); err != nil {
			return store.Document{}, fmt.Errorf("labels of %s %q: %w", m.Kind, m.Key, err)
		}
	}
	normalize(&d)
	return d, nil
}

// normalize makes empty payloads, finalizers, owners and labels nil, as
// every tend backend returns them.
func normalize(d *store.Document) {
	if len(d.Spec) == 0 {
		d.Spec = nil
	}
	if len(d.Status) == 0 {
		d.Status = nil
	}
	if len(d.Meta.Finalizers) == 0 {
		d.Meta.Finalizers = nil
	}
	if len(d.Meta.Owners) == 0 {
		d.Meta.Owners = nil
	}
	if len(d.Meta.Labels) == 0 {
		d.Meta.Labels = nil
	}
}

// metaArgs returns the finalizers, owners, owner UIDs and labels of m as
// parameters, NULL when empty.
func metaArgs(m *store.Meta) (finalizers []string, owners []byte, ownerUIDs []string, labels []byte, err error) {
	if len(m.Finalizers) > 0 {
		finalizers = m.Finalizers
	}
	if len(m.Owners) > 0 {
		if owners, err = json.Marshal(m.Owners); err != nil {
			return nil, nil, nil, nil, err
		}
		ownerUIDs = make([]string, len(m.Owners))
		for i, o := range m.Owners {
			ownerUIDs[i] = o.UID
		}
	}
	if len(m.Labels) > 0 {
		if labels, err = json.Marshal(m.Labels); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	return finalizers, owners, ownerUIDs, labels, nil
}

// orNull returns b, or nil (NULL) when it is empty.
func orNull(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
