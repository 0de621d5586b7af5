package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/moby/moby/client"
)

// ServerPath is where the workspace image holds its program, its entrypoint.
const ServerPath = "/workspace-server"

// JobPath is where the job image holds the storage job's program, its
// entrypoint.
const JobPath = "/storage-job"

// ImportImage imports the workspace image ref into the engine from no
// registry: a root file system holding only the program at binary (a
// static build of package server: CGO_ENABLED=0 go build) as [ServerPath],
// its entrypoint. It streams the tarball to the engine's image import
// endpoint; importing again replaces the tag.
func ImportImage(ctx context.Context, cli *client.Client, ref, binary string) error {
	return importImage(ctx, cli, ref, binary, ServerPath)
}

// ImportJobImage imports the storage jobs' image ref as [ImportImage]
// imports the workspace image: the program at binary (a static build of
// cmd/storage-job) alone, as [JobPath], its entrypoint.
func ImportJobImage(ctx context.Context, cli *client.Client, ref, binary string) error {
	return importImage(ctx, cli, ref, binary, JobPath)
}

// importImage imports image ref holding only the program at binary, as its
// entrypoint at path.
func importImage(ctx context.Context, cli *client.Client, ref, binary, path string) error {
	f, err := os.Open(binary)
	if err != nil {
		return fmt.Errorf("docker: image %s: %w", ref, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("docker: image %s: %w", ref, err)
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(writeRootFS(pw, f, fi.Size(), path))
	}()
	defer func() {
		pr.Close() // unblocks the writer if the import failed early
		<-done
	}()

	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: pr, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: []string{`ENTRYPOINT ["` + path + `"]`}})
	if err != nil {
		return fmt.Errorf("docker: import %s: %w", ref, err)
	}
	defer res.Close()
	// The engine streams JSON messages; a failure is one with an error.
	dec := json.NewDecoder(res)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("docker: import %s: %w", ref, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("docker: import %s: %s", ref, msg.Error)
		}
	}
}

// writeRootFS writes the image's root file system, the program alone at
// path, as a tar stream, with an empty /tmp.
func writeRootFS(w io.Writer, program io.Reader, size int64, path string) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}); err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: path[1:], Mode: 0o755, Size: size}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, program); err != nil {
		return err
	}
	return tw.Close()
}
