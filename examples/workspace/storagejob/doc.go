// Package storagejob is the storage job of the workspace data plane: the
// program that moves a workspace's volume to an archive in object storage
// (archive) or back (restore), run in isolation from everything else.
//
// # Isolation
//
// A storage job knows nothing of the document store, the reconciler or the
// control plane. Its whole input is its command, the full URL of the
// archive ([EnvArchiveURL]: it never builds a path) and the object storage's
// endpoint and keys ([Credentials], read from the variables the AWS tools
// read); its whole output is its exit code. The volume is mounted at
// [DataDir] and belongs to the job alone while it runs (no workspace
// container runs then); its temporary files (the archive being written or
// downloaded, the staging directory) live in the job's own scratch space,
// the system's temporary directory, which vanishes with the job. It is
// crash-only, stateless and idempotent: a job that dies is run again from
// the start, and an archive job whose archive is complete exits 0 at once.
//
// # Exit codes
//
//   - [ExitOK] (0): done.
//   - [ExitRetry] (1): a failure a new run may not meet (the network, the
//     object store); any other non-zero exit, such as a kill, means the same.
//   - [ExitTerminal] (2): a failure no run fixes: a checksum mismatch, a
//     missing archive or volume (data loss), an unsafe or oversized archive,
//     or a malformed invocation.
//
// # Runners
//
// The data plane starts jobs through a dataplane.JobRunner and judges them
// by their observed exit, never by a call returning: the workspace backends
// run them as a child process (local), a container of the job image (docker)
// or a Kubernetes Job (kube). [Main] is the program; cmd/storage-job wraps it.
//
// The program is the one the storage jobs of package archive describe
// (archive.Jobs): see there for the archive's layout, the HEAD check, the
// upload order and safe extraction.
package storagejob
