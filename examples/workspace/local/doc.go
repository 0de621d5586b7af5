// Package local holds the embedded default backends of the workspace data
// plane, for one machine and no infrastructure: a volume is a directory, a
// container is a local process, archives go to an objstore.Dir.
//
// # Containers as processes
//
// [Instances] runs the container ws-{id} as a child process: the running
// program itself, re-executed in container mode ([ServeIfContainer], called
// first thing in main and TestMain), serving the home volume over HTTP on a
// loopback port (GET reads a file, PUT writes one). The container is running
// when it answers its health check with its own name, which is what a proxy
// needs to know. Delete sends SIGKILL, as the data plane's immediate stop asks.
//
// A process rather than an http.Server per workspace in the controller
// process: a container then has its own lifetime, address and failure
// domain, a kill is a real SIGKILL, and the controller holds no goroutine per
// container, which is the shape of the Docker and Kubernetes backends the
// interfaces are made for. Each child watches a pipe from its parent and
// exits when the parent dies, so the embedded default never leaves processes
// behind; after a restart, Start finds the container not running and starts
// it again (contract 3).
//
// # Volumes and archives
//
// [Storage] keeps volume ws-{id}-home as a directory, and its restore marker
// (the archive key it was restored from, what a Docker volume label or a PVC
// annotation would hold) in a file beside it. Archive and restore are
// storage jobs (package storagejob), each a child process ([Jobs]): the
// running program re-executed in job mode, with the volume's directory, a
// scratch directory of its own and nothing in its environment but the
// archive's URL and the object storage's keys. Like a container, a job
// watches a pipe from its parent and exits when the parent dies.
package local
