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
// any bytes a name may hold (':', '\\', newlines, invalid UTF-8, 255 bytes
// long), deep paths, empty directories, permission bits, and symbolic links
// whatever they point at (chains, dangling, absolute, leading out). Special
// files (devices, FIFOs, sockets) are left out and listed in
// [ArchiveResult.Excluded]: they do not outlive the processes that use them.
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
//     does not hold (rsync --delete).
//
// # Safe extraction
//
// [Extract] and [ExtractTar] refuse, with [ErrUnsafe], only what would write
// outside the target directory: absolute names, ".." components leading above
// it, entries written through a symbolic link that leads outside it or to an
// absolute path, hard links to anything but a regular file inside it, and
// special files. Whether a path leads outside is decided by resolving it
// against the tree extracted so far, link by link, as the kernel would, not
// by its spelling: a link to "/etc/passwd" is only data, and an entry under a
// link that points inside the tree lands inside. Every write also goes
// through an [os.Root], so even a refused archive writes nothing outside the
// target directory.
//
// # Cancellation
//
// Archiving, extracting, syncing, uploading and downloading stop within one
// copy buffer (32 KiB) of their context's end, also in the middle of a large
// file.
//
// # Errors
//
// [ErrChecksum], [ErrUnsafe], [ErrNotFound] and [ErrNoSource] are terminal:
// retrying cannot fix them (a checksum mismatch, data loss). Other errors
// (network, disk hiccups) are transient.
package archive
