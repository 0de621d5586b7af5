// Package objstore is the object storage the workspace archives go to: a
// small [Store] interface with the semantics of S3-compatible storage (HEAD,
// PUT, GET, DELETE, LIST by prefix); [Dir], the embedded default that keeps
// objects as files in a directory; and [S3], a bucket of any S3-compatible
// server.
//
// # Semantics
//
// Keys are slash-separated relative paths ("ws1/op1/home.tar.zst"). A Put is
// atomic: a reader sees the whole object or none of it, never a prefix, as
// with S3. A Delete of a missing object succeeds. Head and Get of a missing
// object fail with [ErrNotFound]. List returns every object under a prefix,
// sorted by key.
//
// The archive jobs and the GC runner only ever use [Store]. Package
// [github.com/tendhq/tend/examples/workspace/objstore/objstoretest] holds the
// behavioural suite both stores pass.
//
// # S3
//
// [NewS3] connects with path-style addressing ("endpoint/bucket/key"), so it
// works with servers that have no per-bucket DNS names (MinIO, versitygw, Ceph
// RGW, or AWS itself), and checks the bucket at once, creating it when
// [S3Config.CreateBucket] is set: a wrong endpoint, wrong keys or a missing
// bucket fail there with an error that names them. A Put from a reader that
// can seek (a file, as the archive job uploads) is one PUT; a stream of
// unknown length goes up in parts of [S3Config.PartSize] and a failed upload
// is aborted, so a Put stays atomic. Release the connections with [S3.Close].
package objstore
