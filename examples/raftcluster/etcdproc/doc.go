// Package etcdproc runs etcd members as child processes of the current
// program, on loopback ports, each on its own data directory.
//
// # Why child processes
//
// A member that is a process can be killed outright (SIGKILL), as a machine
// loses power: nothing is flushed, nothing is closed. When it is started again
// on the same data directory, etcd replays its write-ahead log and rejoins the
// cluster with the same identity. That is the failure a controller of a Raft
// cluster must survive, and an in-process server stopped politely would not
// show it.
//
// # Re-executing the program
//
// The child is the current executable run again with the member's
// configuration in the environment variable [EnvMember]. A program that uses
// a [Runtime] calls [RunChildIfRequested] first thing in main (and in
// TestMain for tests): in a child it runs the member until it is signalled and
// exits; in the parent it returns at once and the program goes on.
//
// # Runtime
//
// [Runtime.Start] starts a member unless it is running; [Runtime.Stop] stops
// it with SIGTERM (SIGKILL if the context ends first) and waits for it;
// [Runtime.Kill] kills it with SIGKILL, as a crash would. A member that exits
// without being stopped is reported on [Runtime.Exited], so a controller can
// start it again. [Runtime.Close] stops every member and returns once every
// goroutine the runtime started has ended.
package etcdproc
