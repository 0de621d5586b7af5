// Package objstore is the object storage the workspace archives go to: a
// small [Store] interface with the semantics of S3-compatible storage (HEAD,
// PUT, GET, DELETE, LIST by prefix), and [Dir], the embedded default that keeps
// objects as files in a directory.
//
// # Semantics
//
// Keys are slash-separated relative paths ("ws1/op1/home.tar.zst"). A Put is
// atomic: a reader sees the whole object or none of it, never a prefix, as
// with S3. A Delete of a missing object succeeds. Head and Get of a missing
// object fail with [ErrNotFound]. List returns every object under a prefix,
// sorted by key.
//
// An S3 backend implements the same interface; the archive jobs and the GC
// runner only ever use [Store].
package objstore
