// Package objstoretest is the behavioural suite every [objstore.Store]
// passes, and the S3 store of the test server for the tests of other
// packages.
//
// An implementation's tests call [Run] with a function that returns a fresh,
// empty store:
//
//	func TestDir(t *testing.T) {
//		objstoretest.Run(t, func(t *testing.T) objstore.Store {
//			d, err := objstore.NewDir(t.TempDir())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return d
//		})
//	}
//
// # What it checks
//
// One subtest per property of [objstore.Store]: a missing object fails Head
// and Get with [objstore.ErrNotFound]; Put stores and replaces whole objects,
// from readers that can seek and from streams longer than one upload part;
// a Put whose reader fails, at the start or after a part was sent, leaves the
// previous object and nothing else; List returns every object under a
// prefix with its size, sorted by key; Delete is idempotent; invalid keys are
// refused with [objstore.ErrInvalidKey].
//
// # The S3 test server
//
// [S3] opens an [objstore.S3] on a fresh bucket of the server that
// scripts/test.sh starts (scripts/servers/s3.sh), named by the environment
// variables TEND_S3_ENDPOINT, TEND_S3_ACCESS_KEY, TEND_S3_SECRET_KEY and
// TEND_S3_REGION. Without them a test fails when CI is set and is skipped
// otherwise, with a message saying to run `make test`.
package objstoretest
