// Package probe writes and reads back a key through an etcd cluster whose
// members change, and counts what succeeded: the evidence that a cluster
// kept its quorum through every change.
//
// # Retries
//
// A leader election interrupts writes for a moment, and a client may try a
// member that just left. So each write and each read is retried (Config.Tries
// attempts, each bounded by Config.Timeout): a blip is absorbed, while a lost
// quorum, which never comes back by itself, shows as a failed write.
package probe
