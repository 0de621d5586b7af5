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
	updateStatus                              string
	compactCheck, compact, currentCompaction  string
	changes                                   string
	acquire, leaseHolder, renew, release, lst string
}

// bump takes the next revision. Every write takes it as its last lock, so
// revisions commit in order: a watcher that has read revision n has seen
// every revision before it.
//
// The statements read rev through scalar subqueries, (SELECT value FROM
// rev), and never join it: the planner cannot know that the counter table
// holds one row until the table is analyzed, and a join would multiply its
// guess (a thousand rows or so) into plans costly enough to be compiled
// (JIT) at every execution.
const bump = `rev AS (UPDATE {s}.revision SET value = value + 1 RETURNING value)`

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

		listRevision: sub(`SELECT value FROM {s}.revision`),
		listPrefix:   sub(`SELECT ` + docCols + ` FROM {s}.documents WHERE kind = $1`),

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
		// updateStatus is a status write in one statement, and so in a
		// transaction of its own: the revision counter is locked only while
		// the server runs it and commits, never across a round trip to the
		// client. It locks the fence's lease ($5, NULL for none, at fence
		// $6) and the document before it takes the counter, as inTx and put
		// do, and writes only if the lease is held, the stored revision is
		// $3 and the stored status is not $4 already. Its one row is
		// (lease held, written, the document as written or else as stored);
		// there is none if the document does not exist.
		updateStatus: sub(`WITH
			fence AS (SELECT $5::text IS NULL OR EXISTS (SELECT FROM {s}.leases
				WHERE name = $5 AND fence = $6 AND held AND expires > now() FOR SHARE) AS held),
			cur AS (SELECT ` + docCols + ` FROM {s}.documents WHERE kind = $1 AND key = $2 FOR UPDATE),
			rev AS (UPDATE {s}.revision SET value = value + 1
				WHERE (SELECT held FROM fence) AND (SELECT revision = $3 AND status IS DISTINCT FROM $4 FROM cur)
				RETURNING value),
			d AS (UPDATE {s}.documents SET revision = (SELECT value FROM rev), updated_at = now(), status = $4
				WHERE kind = $1 AND key = $2 AND EXISTS (SELECT FROM rev)
				RETURNING ` + docCols + `),
			` + fmt.Sprintf(logChange, "2") + `
			SELECT (SELECT held FROM fence), true, ` + docCols + ` FROM d
			UNION ALL
			SELECT (SELECT held FROM fence), false, ` + docCols + ` FROM cur WHERE NOT EXISTS (SELECT FROM d)`),
		// removeQuiet deletes a document whose removal put already logged.
		removeQuiet: sub(`DELETE FROM {s}.documents WHERE kind = $1 AND key = $2`),

		compactCheck: sub(`SELECT value FROM {s}.revision FOR UPDATE`),
		compact: sub(`WITH gone AS (DELETE FROM {s}.changes WHERE revision <= $1)
			UPDATE {s}.revision SET compacted = greatest(compacted, $1)`),
		currentCompaction: sub(`SELECT compacted FROM {s}.revision`),
		changes: sub(`SELECT (SELECT compacted FROM {s}.revision), revision, type,
				kind, key, uid, doc_revision, generation, created_at, updated_at, deletion_requested_at,
				finalizers, owners, labels, spec, status
			FROM {s}.changes WHERE kind = $1 AND revision > $2 ORDER BY revision LIMIT $3`),

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
