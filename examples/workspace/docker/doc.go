// Package docker holds the Docker backends of the workspace data plane, as
// the data plane names them: a container is a Docker container, a volume a Docker
// volume. It talks to the engine through the Docker Engine API client
// (github.com/moby/moby/client), never the docker command.
//
// # Containers
//
// [Instances] runs container ws-{id} from the workspace image on the host
// network with volume ws-{id}-home mounted at [HomeDir]. Each container
// serves its home over HTTP as the embedded backend's containers do (the
// program in package server, on local.Handler) on a free loopback port
// that Start picks and records in the container's [LabelAddr] label. A
// container is running when the engine says so and it answers its health
// check with its own name. Delete is a forced remove: SIGKILL, as the
// data plane's immediate stop asks. Nothing is kept in memory: a restarted
// controller reads everything back from the engine.
//
// # The image, from no registry
//
// [ImportImage] builds the workspace image locally: it streams a tarball
// holding only the static program of package server to the engine's image
// import endpoint, with the program as entrypoint. No registry is reached
// and nothing is pulled.
//
// # Volumes and archives
//
// [Storage] keeps volume ws-{id}-home as a Docker volume of the local
// driver. Archive and restore are storage jobs (package storagejob), each a
// container of the job image ([Jobs], [ImportJobImage]) that mounts the
// volume and an anonymous scratch volume and takes the archive's URL and
// the object storage's keys as its whole environment; a job starts only on
// a volume no container mounts, and a workspace's container only on a volume
// no job mounts ([ErrVolumeInUse]). The restore marker lives in the label of
// a marker volume ([MarkerName]) since a volume's labels cannot change.
//
// Every method is idempotent (contract 3): creating what exists, removing
// what is missing and killing what is not running are no errors.
package docker
