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
// Special files (devices, FIFOs, sockets) and symbolic links that would
// resolve outside the volume are left out, so an archive this job writes is
// always one the restore job accepts.
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
// [Extract] and [ExtractTar] refuse, with [ErrUnsafe], absolute paths, ".."
// components, entries under a symbolic link, symbolic and hard links that
// resolve outside the target directory (through any chain of links), devices,
// FIFOs and other special files. Every write goes through an [os.Root], so
// even a refused archive writes nothing outside the target directory.
//
// # Errors
//
// [ErrChecksum], [ErrUnsafe], [ErrNotFound] and [ErrNoSource] are terminal:
// retrying cannot fix them (a checksum mismatch, data loss). Other errors
// (network, disk hiccups) are transient.
package archive
