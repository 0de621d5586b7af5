package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/tendhq/tend/examples/internal/ctxio"
)

// DefaultPartSize is the size of the parts an [S3] store uploads a stream of
// unknown length in, and so the memory one such upload buffers.
const DefaultPartSize = 16 << 20

// S3Config configures [NewS3].
type S3Config struct {
	// Endpoint is the server's URL: "http://127.0.0.1:7070" or
	// "https://s3.example.com". Required.
	Endpoint string
	// Bucket holds the objects. Required.
	Bucket string
	// AccessKey and SecretKey sign the requests. Both empty means anonymous
	// requests.
	AccessKey, SecretKey string
	// Region is the bucket's region; empty means "us-east-1".
	Region string
	// CreateBucket makes NewS3 create the bucket when it does not exist;
	// otherwise a missing bucket is an error.
	CreateBucket bool
	// PartSize is the part size of multipart uploads (at least 5 MiB); zero
	// means [DefaultPartSize].
	PartSize int64
	// Transport carries the requests; nil means a transport of the store's
	// own, whose idle connections [S3.Close] closes.
	Transport http.RoundTripper
}

// S3 is a [Store] on a bucket of an S3-compatible server, addressed by path
// ("endpoint/bucket/key"). A Put of a reader that can seek is one PUT request;
// any other reader is uploaded in parts of [S3Config.PartSize], and a failed
// upload is aborted, so the previous object stays. Build one with [NewS3].
type S3 struct {
	client   *minio.Client
	bucket   string
	partSize int64
	own      *http.Transport // nil when the caller supplied the transport
}

var _ Store = (*S3)(nil)

// NewS3 returns a store on cfg's bucket. It checks that the bucket exists,
// creating it when cfg.CreateBucket is set, so a wrong endpoint, wrong keys
// or a missing bucket fail here rather than at the first upload.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return nil, fmt.Errorf("objstore: S3 endpoint %q: want http://host:port or https://host:port", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("objstore: NewS3 needs a bucket")
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	if cfg.PartSize < 5<<20 {
		return nil, fmt.Errorf("objstore: S3 part size %d is below the 5 MiB minimum", cfg.PartSize)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	s := &S3{bucket: cfg.Bucket, partSize: cfg.PartSize}
	transport := cfg.Transport
	if transport == nil {
		s.own = http.DefaultTransport.(*http.Transport).Clone()
		transport = s.own
	}
	creds := credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	if cfg.AccessKey == "" && cfg.SecretKey == "" {
		creds = credentials.New(&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}})
	}
	s.client, err = minio.New(u.Host, &minio.Options{
		Creds:        creds,
		Secure:       u.Scheme == "https",
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
		Transport:    transport,
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: S3 client: %w", err)
	}
	if err := s.ensureBucket(ctx, cfg.CreateBucket, cfg.Region); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *S3) ensureBucket(ctx context.Context, create bool, region string) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("objstore: S3 bucket %s at %s: %w", s.bucket, s.client.EndpointURL(), err)
	}
	if ok {
		return nil
	}
	if !create {
		return fmt.Errorf("objstore: S3 bucket %s does not exist at %s: create it, or set S3Config.CreateBucket", s.bucket, s.client.EndpointURL())
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	if code := minio.ToErrorResponse(err).Code; err != nil && code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
		return fmt.Errorf("objstore: creating S3 bucket %s at %s: %w", s.bucket, s.client.EndpointURL(), err)
	}
	return nil
}

// Close releases the idle connections of the store's own transport. The
// store must not be used after.
func (s *S3) Close() {
	if s.own != nil {
		s.own.CloseIdleConnections()
	}
}

// s3Error maps a missing object to ErrNotFound and names the key otherwise.
func s3Error(op, key string, err error) error {
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("objstore: S3 %s %s: %w", op, key, err)
}

// Head implements [Store].
func (s *S3) Head(ctx context.Context, key string) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	oi, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s3Error("HEAD", key, err)
	}
	return Info{Key: key, Size: oi.Size, Modified: oi.LastModified}, nil
}

// Put implements [Store].
func (s *S3) Put(ctx context.Context, key string, r io.Reader) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	size := int64(-1)
	if sk, ok := r.(io.Seeker); ok {
		if n, err := remaining(sk); err == nil {
			size = n
		}
	}
	// The client reads r in parts; ctxio stops the reads once ctx ends,
	// whatever the client is doing with the part in hand.
	_, err := s.client.PutObject(ctx, s.bucket, key, ctxio.Reader(ctx, r), size, minio.PutObjectOptions{
		PartSize:    uint64(s.partSize),
		ContentType: "application/octet-stream",
	})
	if err != nil {
		return s3Error("PUT", key, err)
	}
	return nil
}

// remaining returns how many bytes a seeker has left, leaving its offset as
// it was.
func remaining(s io.Seeker) (int64, error) {
	cur, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	end, err := s.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	if _, err := s.Seek(cur, io.SeekStart); err != nil {
		return 0, err
	}
	return end - cur, nil
}

// Get implements [Store].
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err == nil {
		_, err = obj.Stat() // sends the request: a missing object fails here
	}
	if err != nil {
		if obj != nil {
			obj.Close()
		}
		return nil, s3Error("GET", key, err)
	}
	return obj, nil
}

// Delete implements [Store].
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		return s3Error("DELETE", key, err)
	}
	return nil
}

// List implements [Store].
func (s *S3) List(ctx context.Context, prefix string) ([]Info, error) {
	var out []Info
	for oi := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("objstore: S3 list %q: %w", prefix, oi.Err)
		}
		if strings.HasSuffix(oi.Key, "/") {
			continue // a directory marker, not an object
		}
		out = append(out, Info{Key: oi.Key, Size: oi.Size, Modified: oi.LastModified})
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
