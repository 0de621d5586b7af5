// Package archive holds the storage jobs of the workspace data plane: the
// archive job (volume → object storage) and the restore job (object storage →
// volume), and the safe extraction they rely on.
//
// # Layout
//
// An archive of a workspace's home lives at [Key]: {workspace_id}/{op_id}/home.tar.zst,
// a tar stream compressed with zstd, next to [MetaKey] (the same key plus
// ".meta"), which holds the archive's checksum as "sha256:{hex}". The .meta
// object is the commit marker: an archive without it is incomplete.
//
// # Archive job
//
// [Jobs.Archive] is idempotent through the operation id in its key:
//
//  1. HEAD check: when the archive and its .meta both exist, it is done.
//  2. Write the volume as tar + zstd to scratch space, hashing it.
//  3. Upload the archive, then its .meta, in that order. A crash in between
//     leaves an archive without .meta, which the next run overwrites.
//
// Every tree a Linux workspace may hold round-trips byte for byte: names with
// any bytes a name may hold (anything but '/' and NUL: ':', '\\', newlines,
// invalid UTF-8, a leading '-', 255 bytes long), paths of any depth and
// length (PAX headers; longer than the kernel takes whole, since both sides
// walk the tree component by component through an [os.Root]), empty
// directories, permission bits, hard links between regular files, and
// symbolic links whatever they point at (chains, through "..", to
// directories, dangling, absolute, leading out). Special files (devices,
// FIFOs, sockets) are left out and listed in [ArchiveResult.Excluded]: they
// do not outlive the processes that use them, and they are never a reason to
// refuse a restore. [Write] makes no entry [ExtractTar] refuses: it names
// each entry as the tree holds it, never under a symbolic link. Owners,
// modification times and setuid, setgid and sticky bits are not restored.
//
// # Restore job
//
// [Jobs.Restore] is crash-only: it keeps nothing between runs, and a retry
// starts over.
//
//  1. Download the archive and its .meta to scratch space.
//  2. Verify the sha256; a mismatch fails with [ErrChecksum] before anything
//     is extracted, so the volume is untouched.
//  3. Extract to a staging directory ([ExtractTar]).
//  4. Sync the staging directory into the volume, deleting files the archive
//     does not hold (rsync -aH --delete, see [Sync]).
//
// # Safe extraction
//
// [Extract] and [ExtractTar] refuse, with [ErrUnsafe], only what would be
// written outside the target directory or cannot be a workspace's file:
// empty and absolute names, names leading above the target, names passing
// through a symbolic link to an absolute path, hard links to anything but a
// regular file extracted inside the target, and special files. Whether a
// name leads outside is decided by resolving it against the tree extracted
// so far, link by link and ".." by "..", as the kernel would, not by its
// spelling: a name with ':' or ".." in it, or under a link leading back
// inside, lands inside and is accepted.
//
// Symbolic links are data. Each is restored as it was, whatever it points
// at, since creating a link writes nothing outside the target. Nothing is
// ever written through a link out of the target: a later entry under it is
// refused, and a later entry named like it replaces it. Every write also goes
// through an [os.Root] on the target, which refuses escapes on its own, so
// even a refused archive writes nothing outside the target directory.
//
// # Cancellation
//
// Archiving, extracting, syncing, uploading and downloading stop within one
// copy buffer (32 KiB) of their context's end, also in the middle of a large
// file: every copy reads at most 32 KiB at a time and checks its context
// before each read, whatever the size of the reads its reader is asked for.
//
// # Errors
//
// [ErrChecksum], [ErrUnsafe], [ErrTooLarge], [ErrNotFound] and [ErrNoSource]
// are terminal ([Terminal]): retrying cannot fix them (a checksum mismatch,
// a refused archive, data loss). Other errors (network, disk hiccups) are
// transient.
package archive
