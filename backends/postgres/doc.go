// Package postgres is a [store.Backend] on PostgreSQL (version 13 or newer),
// for control planes whose replicas share one database.
//
// # Setup
//
// [New] takes a pgx pool (or a URL to open one), a schema and the kinds to
// hold. It applies the schema migrations it knows with [Migrate], so the
// store never runs on tables it does not understand: migrations are
// versioned in a schema_version table, applied in one transaction under an
// advisory lock (several replicas may start at once), and a schema migrated
// by a newer release is refused with [ErrSchemaTooNew]. Stores on different
// schemas of one database are independent.
//
// # Documents
//
// A document is one row of the documents table: its metadata in columns
// (labels as JSONB with a GIN index, owner UIDs as an indexed text array)
// and Spec and Status as bytea. The payloads are kept as bytes, not JSONB,
// because the store contract treats them as opaque: JSONB would refuse a
// non-JSON codec, and would reorder keys and drop spaces, so the bytes read
// back (and the generation, which grows when the Spec bytes change) would
// not be the bytes written.
//
// A paged List ([store.ListOptions.Limit]) reads by key after the last key
// of the page before, on an index of (kind, key) in byte order (schema
// version 2): keyset pagination, so every page costs the same. The table
// holds only the newest version of each document, so pages are read at
// their own time: a document no write touched between pages appears
// exactly once; one created, changed or removed meanwhile at most once.
//
// Each write is one read-committed transaction: it locks the document row
// (SELECT … FOR UPDATE), checks the revision precondition and the rules of
// finalizers in Go, then writes the row and appends the change to the
// change log in one statement. A status write, a controller's most frequent
// write, needs no rule in Go: it is a single statement, and so a
// transaction of its own, that locks the row, checks the revision and
// writes, in one round trip. Driver errors become store sentinels: a
// failed precondition is [store.ErrConflict], a unique violation
// [store.ErrAlreadyExists]; deadlocks and serialization failures are retried,
// and so is a transaction whose connection was lost before it committed
// (for a status write: before its result came back, when the server
// reported the failure).
// A write that still cannot reach the server fails with [ErrUnavailable] and
// wrote nothing (or, if the connection was lost during the commit itself, the
// error says the outcome is unknown; the revision precondition makes a retry
// safe).
//
// # Revisions and watches
//
// Revisions come from a one-row counter that every write increments as its
// last step and holds until it commits. Writes therefore commit in revision
// order, so a watcher that has read revision n has seen every revision
// before it: a transaction with a lower revision can never become visible
// after one with a higher revision. The lock is held for one statement and
// the commit, which bounds write throughput by commit latency; the
// alternative, tracking in-flight transactions, costs more than it saves
// at a control plane's write rates. A status write holds it only while the
// server runs the statement and commits; other writes hold it also while
// their COMMIT travels from the client.
//
// Each change is a row of the changes table: the revision, the event type
// and the document as the change left it. A watch pages through it, and
// between pages waits on its own LISTEN connection for the notification a
// trigger sends at each commit, or for Config.PollInterval, whichever comes
// first: a lost notification (or a lost LISTEN connection) delays an event
// by at most that interval and never loses it. A watch starts no goroutine.
// Writes discard changes older than Config.History revisions, and
// [Store.Compact] discards them on demand; a watch needing discarded history
// fails with [store.ErrCompacted]. Changes a watch has already read into
// its buffer (one page) are still delivered after a compaction; they are
// complete and in order.
//
// # Leases and fencing
//
// Leases are rows with a holder, a fence, a time to live and an expiry judged
// by the server's clock (now()), so replicas with skewed clocks agree. Each
// lease operation is one statement whose WHERE clause is the compare-and-set:
// an acquire succeeds if the lease is free, expired or already the caller's,
// and raises the fence when the holder changes. A fenced write
// ([store.WithFence]) locks the lease row FOR SHARE in its transaction, so the
// lease cannot pass to another holder between the check and the commit.
package postgres
