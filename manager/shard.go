package manager

import "github.com/tendhq/tend/manager/internal/shard"

// ShardOf returns the shard, in [0, shards), that key belongs to: the FNV-1a
// hash of the key modulo shards. Every replica computes the same shard for a
// key. It returns 0 when shards is not positive.
func ShardOf(key string, shards int) int { return shard.Of(key, shards) }
