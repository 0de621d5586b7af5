package archive

import (
	"errors"
	"fmt"
	"strings"
)

// Name is the file name of a home archive inside its operation's prefix.
const Name = "home.tar.zst"

// MetaSuffix is appended to an archive's key to name its checksum object.
const MetaSuffix = ".meta"

// Sentinel errors. All but ErrInvalidKey are terminal for the operation that
// meets them.
var (
	// ErrChecksum: the archive does not match the checksum in its .meta.
	ErrChecksum = errors.New("archive: checksum mismatch")
	// ErrUnsafe: the archive holds an entry extraction refuses.
	ErrUnsafe = errors.New("archive: unsafe entry")
	// ErrNotFound: the archive or its .meta is missing (data loss).
	ErrNotFound = errors.New("archive: not found")
	// ErrNoSource: the directory to archive is missing (data loss).
	ErrNoSource = errors.New("archive: nothing to archive")
	// ErrTooLarge: the archive exceeds the extraction limits.
	ErrTooLarge = errors.New("archive: too large")
	// ErrInvalidKey: a key that is not {workspace_id}/{op_id}/home.tar.zst.
	ErrInvalidKey = errors.New("archive: invalid key")
)

// Key returns the key of the home archive written by operation opID of
// workspace workspaceID: {workspace_id}/{op_id}/home.tar.zst.
func Key(workspaceID, opID string) string {
	return workspaceID + "/" + opID + "/" + Name
}

// MetaKey returns the key of the checksum object of the archive under key.
func MetaKey(key string) string { return key + MetaSuffix }

// ParseKey splits an archive's key, or its .meta's, into the workspace and
// operation ids. ok is false for any other key.
func ParseKey(key string) (workspaceID, opID string, ok bool) {
	key = strings.TrimSuffix(key, MetaSuffix)
	parts := strings.Split(key, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] != Name {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// Terminal reports whether err is one that retrying cannot fix.
func Terminal(err error) bool {
	return errors.Is(err, ErrChecksum) || errors.Is(err, ErrUnsafe) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrNoSource) || errors.Is(err, ErrTooLarge)
}

// ValidateID reports whether id can be a workspace or operation id in a key:
// 1 to 63 letters, digits, '.', '_' or '-', and not "." or "..". Errors match
// ErrInvalidKey.
func ValidateID(id string) error {
	if id == "" || len(id) > 63 || id == "." || id == ".." {
		return fmt.Errorf("%w: id %q", ErrInvalidKey, id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w: id %q", ErrInvalidKey, id)
		}
	}
	return nil
}
