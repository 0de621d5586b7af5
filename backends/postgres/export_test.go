package postgres

// QueuedStatusWrites returns how many status writes wait for the group
// commit in progress.
func QueuedStatusWrites(s *Store) int {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	return len(s.groups.queue)
}

// ErrCommitUnknown marks a write whose connection was lost while it
// committed.
var ErrCommitUnknown = errCommitUnknown

// MigrateTo brings a schema up to an older version than SchemaVersion, to
// test the migrations from it.
var MigrateTo = migrate
