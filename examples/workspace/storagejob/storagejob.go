package storagejob

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/objstore"
)

// The commands of a storage job.
const (
	// Archive archives the volume to the archive's URL unless that archive
	// is complete.
	Archive = "archive"
	// Restore fills the volume from the archive at the URL, deleting what
	// the archive does not hold.
	Restore = "restore"
)

// Exit codes of a storage job.
const (
	// ExitOK: the job is done.
	ExitOK = 0
	// ExitRetry: the job failed in a way a new run may not.
	ExitRetry = 1
	// ExitTerminal: the job failed in a way no run fixes.
	ExitTerminal = 2
)

// The environment of a storage job.
const (
	// EnvArchiveURL holds the full URL of the archive:
	// s3://{bucket}/{key} or file://{dir}/{key}, where key is
	// {workspace_id}/{op_id}/home.tar.zst.
	EnvArchiveURL = "ARCHIVE_URL"
	// EnvEndpoint holds the S3 endpoint, as "http://host:port".
	EnvEndpoint = "AWS_ENDPOINT_URL"
	// EnvAccessKey and EnvSecretKey hold the keys that sign S3 requests.
	EnvAccessKey = "AWS_ACCESS_KEY_ID"
	EnvSecretKey = "AWS_SECRET_ACCESS_KEY"
	// EnvRegion holds the bucket's region.
	EnvRegion = "AWS_REGION"
)

// DataDir is where a job finds the volume unless its -data flag says
// otherwise.
const DataDir = "/data"

// ErrUsage: the job was invoked with a missing or malformed command, flag or
// variable. It is terminal: running the same invocation again cannot help.
var ErrUsage = errors.New("storagejob: usage")

// Credentials reach the object storage an S3 archive URL names.
type Credentials struct {
	// Endpoint is the S3 server's URL: "http://127.0.0.1:7070".
	Endpoint string
	// AccessKey and SecretKey sign the requests; both empty means
	// anonymous requests.
	AccessKey, SecretKey string
	// Region is the bucket's region; empty means the store's default.
	Region string
}

// Vars returns the credentials that are set, by the names of the variables
// a job reads them from.
func (c Credentials) Vars() map[string]string {
	vars := map[string]string{}
	for name, value := range map[string]string{EnvEndpoint: c.Endpoint, EnvAccessKey: c.AccessKey, EnvSecretKey: c.SecretKey, EnvRegion: c.Region} {
		if value != "" {
			vars[name] = value
		}
	}
	return vars
}

// Env returns the environment of a job on the archive at archiveURL: the
// URL and the credentials that are set, as the variables the job reads. It
// is the job's whole input besides its command and volume.
func Env(archiveURL string, c Credentials) []string {
	env := []string{EnvArchiveURL + "=" + archiveURL}
	for name, value := range c.Vars() {
		env = append(env, name+"="+value)
	}
	slices.Sort(env[1:])
	return env
}

// Params are one run's parameters.
type Params struct {
	// Command is Archive or Restore.
	Command string
	// ArchiveURL is the archive's full URL (see [EnvArchiveURL]).
	ArchiveURL string
	// Data is the volume's directory.
	Data string
	// Scratch is the directory for the run's temporary files.
	Scratch string
	// Credentials reach an S3 archive's store.
	Credentials Credentials
	// Limits bound what a restore may extract.
	Limits archive.Limits
}

// Result is what a run did.
type Result struct {
	// Skipped is set when an archive run found its archive complete.
	Skipped bool
	// Size is the size in bytes of the archive an archive run wrote.
	Size int64
	// Excluded lists the special files (devices, FIFOs, sockets) an archive
	// run left out.
	Excluded []string
}

// Run runs one storage job. Its error matches [ErrUsage] for a malformed
// invocation; archive.Terminal reports the others no retry fixes.
func Run(ctx context.Context, p Params) (Result, error) {
	if p.Command != Archive && p.Command != Restore {
		return Result{}, fmt.Errorf("%w: command %q, want %s or %s", ErrUsage, p.Command, Archive, Restore)
	}
	if p.Data == "" || p.Scratch == "" {
		return Result{}, fmt.Errorf("%w: a data and a scratch directory are required", ErrUsage)
	}
	objects, key, closeStore, err := Open(ctx, p.ArchiveURL, p.Credentials)
	if err != nil {
		return Result{}, err
	}
	defer closeStore()
	jobs, err := archive.New(archive.Config{Objects: objects, Scratch: p.Scratch, Limits: p.Limits})
	if err != nil {
		return Result{}, err
	}
	if p.Command == Restore {
		return Result{}, jobs.Restore(ctx, key, p.Data)
	}
	res, err := jobs.Archive(ctx, key, p.Data)
	return Result{Skipped: res.Skipped, Size: res.Size, Excluded: res.Excluded}, err
}

// Open returns the object store holding the archive at rawURL and the
// archive's key in it, with a function that releases the store.
//
//   - s3://{bucket}/{key}: a bucket of the S3 server c names;
//   - file://{dir}/{key}: an objstore.Dir; key is the last three elements
//     of the path, as every archive key has three.
func Open(ctx context.Context, rawURL string, c Credentials) (objstore.Store, string, func(), error) {
	u, err := url.Parse(rawURL)
	if err != nil || rawURL == "" {
		return nil, "", nil, fmt.Errorf("%w: %s %q is not a URL", ErrUsage, EnvArchiveURL, rawURL)
	}
	switch u.Scheme {
	case "s3":
		key := strings.TrimPrefix(u.Path, "/")
		if _, _, ok := archive.ParseKey(key); !ok || u.Host == "" {
			return nil, "", nil, fmt.Errorf("%w: %s %q: want s3://{bucket}/{workspace_id}/{op_id}/%s", ErrUsage, EnvArchiveURL, rawURL, archive.Name)
		}
		if c.Endpoint == "" {
			return nil, "", nil, fmt.Errorf("%w: %s is not set, and %s names an S3 bucket", ErrUsage, EnvEndpoint, EnvArchiveURL)
		}
		s, err := objstore.NewS3(ctx, objstore.S3Config{Endpoint: c.Endpoint, Bucket: u.Host,
			AccessKey: c.AccessKey, SecretKey: c.SecretKey, Region: c.Region})
		if err != nil {
			return nil, "", nil, err
		}
		return s, key, s.Close, nil
	case "file":
		elems := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
		if u.Host != "" || len(elems) < 4 {
			return nil, "", nil, fmt.Errorf("%w: %s %q: want file:///{dir}/{workspace_id}/{op_id}/%s", ErrUsage, EnvArchiveURL, rawURL, archive.Name)
		}
		key := strings.Join(elems[len(elems)-3:], "/")
		if _, _, ok := archive.ParseKey(key); !ok {
			return nil, "", nil, fmt.Errorf("%w: %s %q: want file:///{dir}/{workspace_id}/{op_id}/%s", ErrUsage, EnvArchiveURL, rawURL, archive.Name)
		}
		d, err := objstore.NewDir("/" + path.Join(elems[:len(elems)-3]...))
		if err != nil {
			return nil, "", nil, err
		}
		return d, key, func() {}, nil
	}
	return nil, "", nil, fmt.Errorf("%w: %s %q: want an s3:// or file:// URL", ErrUsage, EnvArchiveURL, rawURL)
}

// ExitCode returns the exit code of a job that ended with err.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrUsage) || archive.Terminal(err):
		return ExitTerminal
	}
	return ExitRetry
}

// Main is the storage job's program: args are the command and its flags
// (-data, the volume, default [DataDir]; -scratch, default the system's
// temporary directory), getenv reads its environment. It reports what it did
// or why it failed on stderr and returns its exit code.
func Main(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("storage-job", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: storage-job %s|%s [-data DIR] [-scratch DIR]\n", Archive, Restore)
		fmt.Fprintf(stderr, "environment: %s, and for s3:// URLs %s, %s, %s, %s\n", EnvArchiveURL, EnvEndpoint, EnvAccessKey, EnvSecretKey, EnvRegion)
		fs.PrintDefaults()
	}
	data := fs.String("data", DataDir, "the volume's directory")
	scratch := fs.String("scratch", os.TempDir(), "the directory for temporary files")
	p := Params{ArchiveURL: getenv(EnvArchiveURL), Credentials: Credentials{
		Endpoint: getenv(EnvEndpoint), AccessKey: getenv(EnvAccessKey), SecretKey: getenv(EnvSecretKey), Region: getenv(EnvRegion)}}
	if len(args) > 0 {
		p.Command = args[0]
		if err := fs.Parse(args[1:]); err != nil {
			return ExitTerminal
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "storage-job: unexpected arguments %q\n", fs.Args())
			return ExitTerminal
		}
	}
	p.Data, p.Scratch = *data, *scratch
	res, err := Run(ctx, p)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "storage-job %s %s: %v\n", p.Command, p.ArchiveURL, err)
	case res.Skipped:
		fmt.Fprintf(stderr, "storage-job %s %s: complete already\n", p.Command, p.ArchiveURL)
	case p.Command == Archive:
		fmt.Fprintf(stderr, "storage-job %s %s: %d bytes\n", p.Command, p.ArchiveURL, res.Size)
		if len(res.Excluded) > 0 {
			fmt.Fprintf(stderr, "storage-job %s %s: left out %d special files: %q\n", p.Command, p.ArchiveURL, len(res.Excluded), res.Excluded)
		}
	default:
		fmt.Fprintf(stderr, "storage-job %s %s: restored\n", p.Command, p.ArchiveURL)
	}
	return ExitCode(err)
}
