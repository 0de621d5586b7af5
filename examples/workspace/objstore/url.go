package objstore

import (
	"net/url"
	"path/filepath"
)

// URL returns the URL of the object under key in d: file://{root}/{key},
// the form a program on this host opens.
func (d *Dir) URL(key string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(d.root) + "/" + key}).String()
}

// URL returns the URL of the object under key in s: s3://{bucket}/{key}.
// The endpoint and the keys that reach it are not part of it: a program
// opening the URL gets them from its environment.
func (s *S3) URL(key string) string {
	return (&url.URL{Scheme: "s3", Host: s.bucket, Path: "/" + key}).String()
}

// Addressable is a [Store] whose objects have URLs that a program elsewhere
// opens, given the store's credentials: how the data plane hands an archive
// to a storage job. [Dir] and [S3] are addressable.
type Addressable interface {
	Store
	// URL returns the full URL of the object under key.
	URL(key string) string
}

var (
	_ Addressable = (*Dir)(nil)
	_ Addressable = (*S3)(nil)
)
