// Package cacheread reads a driver's documents from the shared cache (an
// informer of their kind) and keeps those reads consistent with the
// driver's own writes: a read-your-writes gate, fed by the cache's
// revisions and by the revisions the driver wrote, makes each read wait
// until the cache shows the driver's last write to its key, for a while,
// and [Reader.Confirm] checks with the store, before a step runs, that the
// cache is not behind another writer. Without a cache a Reader reads the
// store.
package cacheread
