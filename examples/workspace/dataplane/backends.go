package dataplane

import "context"

// InstanceController runs workspace containers. It knows no store: the
// WorkspaceController decides, it acts. The container of workspace {id} is
// named ws-{id} and mounts the volume ws-{id}-home, which it computes itself.
// Every method is idempotent and safe for concurrent use on different
// workspaces. An error matching controller.ErrTerminal (see
// controller.Terminal) is terminal; any other is retried.
type InstanceController interface {
	// Start starts the container and returns once it can take traffic
	// (IsRunning reports true). On a running container it does nothing; on a
	// container that exists but is not running it cleans up and starts it
	// again. It never creates a container without its volume.
	Start(ctx context.Context, workspaceID, image string) error
	// Delete kills the container at once (SIGKILL: the volume keeps the data)
	// and removes it. A missing container is no error.
	Delete(ctx context.Context, workspaceID string) error
	// IsRunning reports whether the container can take traffic: whether a
	// proxy may send it requests.
	IsRunning(ctx context.Context, workspaceID string) (bool, error)
}

// StorageProvider keeps workspace volumes and moves their data to and from
// archives (through the storage jobs). It knows no store: it returns what the
// WorkspaceController records. Every method is idempotent and safe for
// concurrent use on different workspaces. An error matching
// controller.ErrTerminal is terminal (checksum mismatch, data loss); any
// other is retried.
type StorageProvider interface {
	// Provision creates the workspace's empty volume; an existing volume is
	// kept as it is.
	Provision(ctx context.Context, workspaceID string) error
	// Restore fills the existing volume from the archive under archiveKey
	// (crash-only: a retry starts over) and marks the volume with the key.
	// It returns the restore marker, archiveKey. While the storage job that
	// does it runs, it returns an error matching [ErrJobRunning]: the
	// caller calls again later.
	Restore(ctx context.Context, workspaceID, archiveKey string) (restoreMarker string, err error)
	// Archive archives the volume under {workspace_id}/{op_id}/home.tar.zst
	// (skipping the upload when the HEAD check finds it complete) and returns
	// that key. It does not delete the volume. While the storage job that
	// does it runs, it returns an error matching [ErrJobRunning].
	Archive(ctx context.Context, workspaceID, opID string) (archiveKey string, err error)
	// DeleteVolume deletes the volume; a missing volume is no error.
	DeleteVolume(ctx context.Context, workspaceID string) error
	// VolumeExists reports whether the volume exists.
	VolumeExists(ctx context.Context, workspaceID string) (bool, error)
	// RestoreMarker returns the archive key the volume was last restored
	// from, read from the volume (a label), or "" when it has none.
	RestoreMarker(ctx context.Context, workspaceID string) (string, error)
	// ArchiveReady reports whether the archive under archiveKey is complete:
	// it and its .meta exist.
	ArchiveReady(ctx context.Context, archiveKey string) (bool, error)
}
