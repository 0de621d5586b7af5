package objstoretest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tendhq/tend/examples/internal/servertest"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// PartSize is the upload part size of the stores [S3] opens: the smallest S3
// allows, so [Run] can send streams of several parts cheaply.
const PartSize = 5 << 20

// Run checks that the stores open returns behave as [objstore.Store]
// documents. open is called once per subtest and must return an empty store.
func Run(t *testing.T, open func(t *testing.T) objstore.Store) {
	for _, tc := range []struct {
		name  string
		check func(t *testing.T, ctx context.Context, s objstore.Store)
	}{
		{"MissingObject", checkMissing},
		{"PutGetHead", checkPutGetHead},
		{"StreamOfSeveralParts", checkStream},
		{"FailedPutKeepsPreviousObject", checkFailedPut},
		{"ListByPrefix", checkList},
		{"DeleteIsIdempotent", checkDelete},
		{"InvalidKeys", checkInvalidKeys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, context.Background(), open(t))
		})
	}
}

func checkMissing(t *testing.T, ctx context.Context, s objstore.Store) {
	if _, err := s.Head(ctx, "ws1/a/home.tar.zst"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Head of a missing object: %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "ws1/a/home.tar.zst"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Get of a missing object: %v, want ErrNotFound", err)
	}
	put(t, s, "ws1/a/home.tar.zst", "x")
	if _, err := s.Head(ctx, "ws1/a"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Head of a key that is only a prefix: %v, want ErrNotFound", err)
	}
}

func checkPutGetHead(t *testing.T, ctx context.Context, s objstore.Store) {
	put(t, s, "ws1/a/home.tar.zst", "first version")
	if err := s.Put(ctx, "ws1/a/home.tar.zst", strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	info, err := s.Head(ctx, "ws1/a/home.tar.zst")
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != "ws1/a/home.tar.zst" || info.Size != 3 || info.Modified.IsZero() {
		t.Errorf("Head after overwrite = %+v, want the key, size 3 and a time", info)
	}
	if got := Read(t, s, "ws1/a/home.tar.zst"); string(got) != "new" {
		t.Errorf("Get = %q, want %q", got, "new")
	}
	// A reader already partly read uploads what is left of it.
	r := strings.NewReader("skip:rest")
	_, _ = r.Seek(5, io.SeekStart)
	if err := s.Put(ctx, "ws1/a/rest", r); err != nil {
		t.Fatal(err)
	}
	if got := Read(t, s, "ws1/a/rest"); string(got) != "rest" {
		t.Errorf("Put from an offset stored %q, want %q", got, "rest")
	}
	put(t, s, "ws1/a/empty", "")
	if got := Read(t, s, "ws1/a/empty"); len(got) != 0 {
		t.Errorf("empty object reads back as %q", got)
	}
}

// stream is a reader that cannot seek, so a store cannot learn its length.
type stream struct{ io.Reader }

func checkStream(t *testing.T, ctx context.Context, s objstore.Store) {
	body := bytes.Repeat([]byte("0123456789abcdef"), (2*PartSize+PartSize/2)/16)
	if err := s.Put(ctx, "ws1/big/home.tar.zst", stream{bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	if got := Read(t, s, "ws1/big/home.tar.zst"); !bytes.Equal(got, body) {
		t.Errorf("a stream of %d bytes read back as %d bytes that differ", len(body), len(got))
	}
	if info, err := s.Head(ctx, "ws1/big/home.tar.zst"); err != nil || info.Size != int64(len(body)) {
		t.Errorf("Head = %+v, %v; want size %d", info, err, len(body))
	}
}

func checkFailedPut(t *testing.T, ctx context.Context, s objstore.Store) {
	put(t, s, "k/v", "old")
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"at the start", io.MultiReader(strings.NewReader("partial"), errReader{})},
		{"after a part", io.MultiReader(bytes.NewReader(make([]byte, PartSize+1)), errReader{})},
	} {
		if err := s.Put(ctx, "k/v", tc.r); err == nil {
			t.Fatalf("Put from a reader failing %s succeeded", tc.name)
		}
		if got := Read(t, s, "k/v"); string(got) != "old" {
			t.Fatalf("after a Put failing %s the object is %d bytes, want the previous one", tc.name, len(got))
		}
	}
	if all := list(t, s, ""); len(all) != 1 {
		t.Errorf("failed Puts left objects behind: %+v", all)
	}
}

func checkList(t *testing.T, ctx context.Context, s objstore.Store) {
	for _, k := range []string{"ws1/b/c", "ws1-x/b", "ws1/a", "ws2/a", "w/s1"} {
		put(t, s, k, "data of "+k)
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"w/s1", "ws1-x/b", "ws1/a", "ws1/b/c", "ws2/a"}},
		{"ws1", []string{"ws1-x/b", "ws1/a", "ws1/b/c"}},
		{"ws1/", []string{"ws1/a", "ws1/b/c"}},
		{"ws1/b/c", []string{"ws1/b/c"}},
		{"ws3/", nil},
	} {
		got, err := s.List(ctx, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range got {
			keys = append(keys, o.Key)
			if want := int64(len("data of " + o.Key)); o.Size != want || o.Modified.IsZero() {
				t.Errorf("List(%q) gave %+v, want size %d and a time", tc.prefix, o, want)
			}
		}
		if strings.Join(keys, " ") != strings.Join(tc.want, " ") {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, keys, tc.want)
		}
	}
}

func checkDelete(t *testing.T, ctx context.Context, s objstore.Store) {
	put(t, s, "ws1/a/home.tar.zst", "a")
	put(t, s, "ws1/a/home.tar.zst.meta", "m")
	for range 2 {
		if err := s.Delete(ctx, "ws1/a/home.tar.zst"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "never/was/there"); err != nil {
		t.Errorf("Delete of a key never written: %v", err)
	}
	if _, err := s.Head(ctx, "ws1/a/home.tar.zst"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Head after Delete: %v, want ErrNotFound", err)
	}
	if all := list(t, s, ""); len(all) != 1 || all[0].Key != "ws1/a/home.tar.zst.meta" {
		t.Errorf("List after Delete = %+v, want only the .meta", all)
	}
}

func checkInvalidKeys(t *testing.T, ctx context.Context, s objstore.Store) {
	for _, k := range []string{"", "/abs", "a//b", "a/../b", "./a", "a/"} {
		if _, err := s.Head(ctx, k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Head(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Put(ctx, k, strings.NewReader("x")); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Get(ctx, k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx, k); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	if all := list(t, s, ""); len(all) != 0 {
		t.Errorf("invalid keys stored objects: %+v", all)
	}
}

// Read returns the whole object under key, failing the test if it cannot.
func Read(t testing.TB, s objstore.Store, key string) []byte {
	t.Helper()
	r, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return b
}

func put(t testing.TB, s objstore.Store, key, data string) {
	t.Helper()
	if err := s.Put(context.Background(), key, strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

func list(t testing.TB, s objstore.Store, prefix string) []objstore.Info {
	t.Helper()
	l, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// S3 returns a store on a fresh bucket of the test server that
// scripts/test.sh starts, closed when the test ends. Without the server's
// environment variables the test fails when CI is set and is skipped
// otherwise.
func S3(t testing.TB) *objstore.S3 {
	t.Helper()
	endpoint := servertest.Env(t, "TEND_S3_ENDPOINT", "s3")
	var b [6]byte
	_, _ = rand.Read(b[:])
	c := S3Credentials()
	s, err := objstore.NewS3(context.Background(), objstore.S3Config{
		Endpoint:     endpoint,
		Bucket:       "tend-test-" + hex.EncodeToString(b[:]),
		AccessKey:    c.AccessKey,
		SecretKey:    c.SecretKey,
		Region:       c.Region,
		CreateBucket: true,
		PartSize:     PartSize,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// S3Credentials returns the endpoint and keys of the test server that
// scripts/test.sh starts, as a storage job takes them: those the stores of
// [S3] use.
func S3Credentials() storagejob.Credentials {
	return storagejob.Credentials{Endpoint: os.Getenv("TEND_S3_ENDPOINT"), AccessKey: os.Getenv("TEND_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("TEND_S3_SECRET_KEY"), Region: os.Getenv("TEND_S3_REGION")}
}
