// Package shard balances a key space's shards among a manager's replicas.
// Each replica announces itself with a member lease; a [Sharder] computes
// its share of the shards from the members, takes free shard leases until
// it holds its share and gives up extra ones once their reconciles are
// done, and admits the keys of the shards it holds (the controllers' gate).
// [Of] maps a key to its shard the same way on every replica.
package shard
