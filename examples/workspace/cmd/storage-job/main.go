// Command storage-job is the storage job of the workspace data plane: it
// archives the volume at /data to the archive ARCHIVE_URL names, or restores
// it from there, and says how it went with its exit code. See package
// storagejob.
//
//	ARCHIVE_URL=s3://archives/ws1/op1/home.tar.zst AWS_ENDPOINT_URL=http://127.0.0.1:7070 \
//	AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… storage-job archive
//
// The Docker backend's job image holds a static build of it
// (CGO_ENABLED=0 go build) as its entrypoint.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tendhq/tend/examples/workspace/storagejob"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := storagejob.Main(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
