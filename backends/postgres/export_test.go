package postgres

// Queued returns how many status writes and reads wait for the group
// commit in progress.
func Queued(s *Store) int {
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
