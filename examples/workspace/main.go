// Command workspace runs the cloud-workspace data plane of the reference
// example on the embedded default — the in-memory store, containers as local
// processes, volumes and object storage as directories — through a scripted
// scenario: create, start, write a file into the home, stop, archive,
// restore, check that the file survived, delete, and collect the orphan
// archives. It shows each workspace's phase and operation as they change and
// exits non-zero if the scenario fails.
//
//	go run ./examples/workspace
//
// With -s3-endpoint the archives go to a bucket of an S3-compatible server
// instead, signed with the keys in AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY:
//
//	go run ./examples/workspace -s3-endpoint http://127.0.0.1:7070
//
// With -kubeconfig the containers are Pods and the volumes
// PersistentVolumeClaims bound to host-path PersistentVolumes of the cluster
// the kubeconfig names (package kube), in a namespace the scenario creates
// and deletes; the volumes' directories must be on this host, as on the
// cluster make test starts, where kwok plays the nodes:
//
//	go run ./examples/workspace -kubeconfig "$TEND_KUBECONFIG"
//
// See README.md beside this file.
package main

//go:generate go test -run ^TestREADMEDiagram$ -update .

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

func main() {
	local.ServeIfContainer() // a container of the scenario: serve and never return
	keep := flag.Bool("keep", false, "keep the scenario's directory (volumes, archives) for inspection")
	timeout := flag.Duration("timeout", 50*time.Second, "give up if the scenario has not finished by then")
	s3Endpoint := flag.String("s3-endpoint", "", "keep the archives on this S3-compatible server (http://host:port) instead of in a directory; keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	s3Bucket := flag.String("s3-bucket", "", "the bucket for -s3-endpoint, created when missing; it must hold no objects, as the scenario checks that it leaves none (default: a new bucket per run)")
	s3Region := flag.String("s3-region", "", "the region for -s3-endpoint (default us-east-1)")
	kubeconfig := flag.String("kubeconfig", "", "run the containers as Pods and the volumes as PersistentVolumeClaims of this cluster, whose nodes see this host's directories (as kwok's do), in a namespace created for the run")
	image := flag.String("image", "workspace:latest", "the containers' image with -kubeconfig: on a cluster with kubelets, the workspace server's (examples/workspace/docker/server) from a registry it can pull")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, *timeout)
	defer cancelTimeout()

	var objects objstore.Store // nil: a directory in the scenario's directory
	if *s3Endpoint != "" {
		s3, err := openS3(ctx, *s3Endpoint, *s3Bucket, *s3Region)
		if err != nil {
			fmt.Fprintln(os.Stderr, "workspace:", err)
			os.Exit(1)
		}
		defer s3.Close()
		objects = s3
	}
	dir, err := os.MkdirTemp("", "tend-workspace-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "workspace:", err)
		os.Exit(1)
	}
	if *keep {
		fmt.Println("scenario directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	start := time.Now()
	runScenario := func() error { return run(ctx, dir, objects, os.Stdout) }
	if *kubeconfig != "" {
		runScenario = func() error { return runCluster(ctx, *kubeconfig, *image, dir, objects, os.Stdout) }
	}
	if err := runScenario(); err != nil {
		fmt.Fprintln(os.Stderr, "workspace: scenario failed:", err)
		cancel()
		if !*keep {
			os.RemoveAll(dir)
		}
		os.Exit(1)
	}
	fmt.Printf("\nscenario passed in %v\n", time.Since(start).Round(time.Millisecond))
}

// openS3 opens the bucket of -s3-endpoint, a new one when bucket is empty.
func openS3(ctx context.Context, endpoint, bucket, region string) (*objstore.S3, error) {
	if bucket == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		bucket = "tend-workspace-" + hex.EncodeToString(b[:])
	}
	s3, err := objstore.NewS3(ctx, objstore.S3Config{
		Endpoint:     endpoint,
		Bucket:       bucket,
		AccessKey:    os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey:    os.Getenv("AWS_SECRET_ACCESS_KEY"),
		Region:       region,
		CreateBucket: true,
	})
	if err == nil {
		fmt.Printf("archives in bucket %s at %s\n", bucket, endpoint)
	}
	return s3, err
}
