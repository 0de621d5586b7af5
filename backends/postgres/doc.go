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
// of the page before, on the primary key (kind, key), whose keys compare
// in byte order (schema version 4): keyset pagination, so every page costs
// the same. The table holds only the newest version of each document, so
// pages are read at their own time: a document no write touched between
// pages appears exactly once; one created, changed or removed meanwhile
// at most once.
//
// Each write other than a status write is one read-committed transaction:
// it locks the document row (SELECT … FOR UPDATE), checks the revision
// precondition and the rules of finalizers in Go, then writes the row and
// appends the change to the change log in one statement. Status writes, a
// controller's most frequent, are committed in groups, without a timer: a
// write that finds no group committing is sent at once, alone; writes that
// arrive while a group commits form the next group, written in one
// statement and one transaction that locks the fences' leases and the
// documents, checks each write's lease, revision and status apart, and
// writes and logs those that pass. Each caller gets its own result (written,
// [store.ErrConflict], [store.ErrNotFound], [store.ErrFenced]) exactly as if
// its write were alone; of two writes to one document, the later waits for
// the next group. A write is acknowledged only once its transaction has
// committed. Reads ride along: a Get, or a watch's read of the change log,
// that finds a group committing joins the next one, whose round trip and
// transaction carry it before the writes (it sees only what has
// committed); one that finds none runs at once, alone. A read therefore
// waits, like a write, for the group before it to commit. Driver errors become store sentinels: a failed precondition is
// [store.ErrConflict], a unique violation [store.ErrAlreadyExists];
// deadlocks and serialization failures are retried, and so is a
// transaction whose connection was lost before it committed (for a status
// write: before its result came back, when the server reported the
// failure). A write that still cannot reach the server fails with
// [ErrUnavailable] and wrote nothing (or, if the connection was lost during
// the commit itself, the error says the outcome is unknown; the revision
// precondition makes a retry safe).
//
// # Revisions and watches
//
// Revisions come from a sequence, which no writer holds until it commits:
// writers on one server never queue behind one another's WAL flush.
// Revisions therefore commit out of order, and skip (a rolled-back write's
// revision is never logged; a crash skips the sequence ahead). A write
// takes its revision and logs its change in one statement. Readers make the
// order total: a watch delivers changes only up to the first gap in the log
// after the revisions it has read, and settles a gap by logging a marker
// there (INSERT … ON CONFLICT DO NOTHING), which waits for a write in
// flight at that revision to commit or roll back; a write that takes a
// revision after its marker was logged fails on the log's key and is
// retried at a new revision. So a watch that has delivered revision n has
// seen every change up to n, across restarts. List reports the last
// revision before the first gap in its snapshot, settling gaps first. Every
// 1,024 revisions, the writer that passes the mark settles the log up to it
// (the watermark List starts from) and discards old history.
//
// Each change is a row of the changes table: the revision, the event type
// and the document as the change left it. A watch pages through it, and
// once it has read to the end of the log waits on its own LISTEN
// connection for the notification a trigger sends once per statement
// (naming the kind, or every kind), or for Config.PollInterval, whichever
// comes first, before it reads again: a lost notification (or a
// lost LISTEN connection) delays an event by at most that interval and
// never loses it. A watch starts no goroutine. Writes discard changes older
// than Config.History revisions, and [Store.Compact] discards them on
// demand; a watch needing discarded history fails with
// [store.ErrCompacted]. Changes a watch has already read into its buffer
// (one page) are still delivered after a compaction; they are complete and
// in order.
//
// # Schema changes
//
// The schema's version is recorded in it; [New] migrates it (version 3
// replaced the revision counter with the sequence; version 4 made the
// primary key compare keys in byte order and dropped the index that did),
// or, with Config.NoMigrate, only checks it and fails with
// [ErrSchemaOutdated] on a missing or older schema, for programs that must
// not change the database.
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
