// Package gc is the GC runner of the workspace data plane: it deletes orphan
// archives, those no workspace needs any more (an earlier archive replaced by
// a newer one, the archives of a deleted workspace), after a safety delay.
//
// # A cycle
//
//  1. List the archives in object storage. A failure skips the cycle.
//  2. Ask the store which archives are protected ([Config.References] and
//     [Protected]). A failure skips the cycle: safety first.
//  3. A protected archive loses its orphan timer. An orphan seen for the
//     first time gets one; an orphan whose timer is older than the safety
//     delay ([Config.Delay], two hours by default) is deleted, its .meta
//     first (so a half-deleted archive looks incomplete, never complete) and
//     then the archive. A failed delete keeps the timer and is retried next
//     cycle.
//  4. The timers are saved ([Config.Timers]), so a restarted runner loses
//     at most one delay: it never deletes early, and at worst waits one
//     delay more for timers it could not save.
//
// # Protection rules
//
// An archive that a live workspace references as its archive_key is not an
// orphan. On top of that, in priority order:
//
//  1. deleted_at set: nothing of that workspace is protected (the user's
//     intent comes first);
//  2. healthy = false: its archive_key and op_id paths are protected (an
//     operator may need them to recover);
//  3. an operation in flight: its op_id path is protected (an archive being
//     uploaded is not referenced yet).
//
// Only keys of the form {workspace_id}/{op_id}/home.tar.zst (and .meta) are
// ever considered; anything else in the bucket is left alone.
//
// [Runner.Run] runs a cycle every [Config.Interval] until its context ends;
// [Runner.Cycle] runs one. Time comes from [Config.Now] and waiting from
// time.Timer, so tests drive the runner with testing/synctest.
package gc
