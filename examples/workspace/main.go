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
// Each archive and restore is a storage job (package storagejob): a child
// process here, which takes the archive's URL and the object storage's keys
// and nothing else.
//
// With -kubeconfig the containers are Pods, the volumes
// PersistentVolumeClaims bound to host-path PersistentVolumes and the
// storage jobs Jobs of the cluster the kubeconfig names (package kube), in a
// namespace the scenario creates and deletes; the volumes' directories must
// be on this host, as on the cluster make test starts, where kwok plays the
// nodes and this process runs the Jobs' Pods (-jobs-here):
//
//	go run ./examples/workspace -kubeconfig "$TEND_KUBECONFIG"
//
// With -listen it serves, while the scenario runs, the controller's probes
// (/readyz, /healthz), its metrics (/metrics), each workspace's history as
// JSON (/history/{kind}/{key}): why a workspace is in its phase, and the web
// console (/console/), read-only unless -console-actions is given. Every
// second it prints a summary line when it changed: workspaces per phase and
// failures.
//
//	go run ./examples/workspace -listen 127.0.0.1:8080
//	open http://127.0.0.1:8080/console/
//
// See README.md beside this file.
package main

//go:generate go test -run ^TestREADMEDiagram$ -update .

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tendhq/tend/examples/workspace/local"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

func main() {
	local.ServeIfContainer() // a container of the scenario: serve and never return
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "workspace:", err)
		os.Exit(2)
	}
	if err := mainErr(c); err != nil {
		fmt.Fprintln(os.Stderr, "workspace:", err)
		os.Exit(1)
	}
}

// cli is what the command line asks for.
type cli struct {
	keep    bool
	timeout time.Duration
	s3      struct{ endpoint, bucket, region string }
	cluster clusterOptions
	listen  string
	ops     ops
}

// parseFlags reads the command line's arguments (without the program's
// name).
func parseFlags(args []string, stderr io.Writer) (cli, error) {
	var c cli
	fs := flag.NewFlagSet("workspace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&c.keep, "keep", false, "keep the scenario's directory (volumes, archives) for inspection")
	fs.DurationVar(&c.timeout, "timeout", 50*time.Second, "give up if the scenario has not finished by then")
	fs.StringVar(&c.s3.endpoint, "s3-endpoint", "", "keep the archives on this S3-compatible server (http://host:port) instead of in a directory; keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	fs.StringVar(&c.s3.bucket, "s3-bucket", "", "the bucket for -s3-endpoint, created when missing; it must hold no objects, as the scenario checks that it leaves none (default: a new bucket per run)")
	fs.StringVar(&c.s3.region, "s3-region", "", "the region for -s3-endpoint (default us-east-1)")
	fs.StringVar(&c.cluster.kubeconfig, "kubeconfig", "", "run the containers as Pods, the volumes as PersistentVolumeClaims and the storage jobs as Jobs of this cluster, whose nodes see this host's directories (as kwok's do), in a namespace created for the run")
	fs.StringVar(&c.cluster.image, "image", "workspace:latest", "the containers' image with -kubeconfig: on a cluster with kubelets, the workspace server's (examples/workspace/docker/server) from a registry it can pull")
	fs.StringVar(&c.cluster.jobImage, "job-image", "storage-job:latest", "the storage Jobs' image with -kubeconfig: on a cluster with kubelets, a build of examples/workspace/cmd/storage-job it can pull")
	fs.BoolVar(&c.cluster.jobsHere, "jobs-here", true, "with -kubeconfig: run the storage Jobs' Pods in this process, as a cluster without kubelets (kwok) needs; false on a cluster whose kubelets run -job-image")
	fs.StringVar(&c.listen, "listen", "", "serve the probes (/readyz, /healthz), the metrics (/metrics), each workspace's history (/history/{kind}/{key}, JSON) and the web console (/console/) on this address while the scenario runs, for example 127.0.0.1:8080")
	fs.BoolVar(&c.ops.consoleActions, "console-actions", false, "with -listen, let the console act on workspaces (pause, resume, retry, skip, move, request, remove a finalizer) for anyone who reaches the address; without it the console is read-only")
	fs.DurationVar(&c.ops.summaryEvery, "summary-every", time.Second, "how often to print the summary line (workspaces per phase, failures) when it changed")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.ops.summaryEvery <= 0 {
		return c, fmt.Errorf("-summary-every %v is not positive", c.ops.summaryEvery)
	}
	if c.ops.consoleActions && c.listen == "" {
		return c, errors.New("-console-actions needs -listen")
	}
	return c, nil
}

func mainErr(c cli) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, c.timeout)
	defer cancelTimeout()

	if c.listen != "" {
		ln, err := net.Listen("tcp", c.listen)
		if err != nil {
			return fmt.Errorf("-listen: %w", err)
		}
		defer ln.Close()
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		c.ops.listener, c.ops.registry = ln, reg
	}
	var a archives // zero: a directory in the scenario's directory
	if c.s3.endpoint != "" {
		s3, creds, err := openS3(ctx, c.s3.endpoint, c.s3.bucket, c.s3.region)
		if err != nil {
			return err
		}
		defer s3.Close()
		a = archives{objects: s3, creds: creds}
	}
	dir, err := os.MkdirTemp("", "tend-workspace-")
	if err != nil {
		return err
	}
	if c.keep {
		fmt.Println("scenario directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	start := time.Now()
	runScenario := func() error { return run(ctx, dir, a, c.ops, os.Stdout) }
	if c.cluster.kubeconfig != "" {
		runScenario = func() error { return runCluster(ctx, c.cluster, dir, a, c.ops, os.Stdout) }
	}
	if err := runScenario(); err != nil {
		return fmt.Errorf("scenario failed: %w", err)
	}
	fmt.Printf("\nscenario passed in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// openS3 opens the bucket of -s3-endpoint, a new one when bucket is empty,
// and returns it with the credentials that reach it: the endpoint, region
// and the keys in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
func openS3(ctx context.Context, endpoint, bucket, region string) (*objstore.S3, storagejob.Credentials, error) {
	if bucket == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		bucket = "tend-workspace-" + hex.EncodeToString(b[:])
	}
	creds := storagejob.Credentials{Endpoint: endpoint, AccessKey: os.Getenv(storagejob.EnvAccessKey),
		SecretKey: os.Getenv(storagejob.EnvSecretKey), Region: region}
	s3, err := objstore.NewS3(ctx, objstore.S3Config{
		Endpoint:     creds.Endpoint,
		Bucket:       bucket,
		AccessKey:    creds.AccessKey,
		SecretKey:    creds.SecretKey,
		Region:       creds.Region,
		CreateBucket: true,
	})
	if err == nil {
		fmt.Printf("archives in bucket %s at %s\n", bucket, endpoint)
	}
	return s3, creds, err
}
