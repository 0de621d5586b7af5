package archive_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/objstore/objstoretest"
)

type fixture struct {
	objects *recorder
	jobs    *archive.Jobs
	scratch string
}

// forEachStore runs test once per kind of object store: a directory, and a
// bucket of the S3 server scripts/test.sh starts.
func forEachStore(t *testing.T, test func(t *testing.T, f *fixture)) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) objstore.Store
	}{
		{"Dir", func(t *testing.T) objstore.Store {
			d, err := objstore.NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"S3", func(t *testing.T) objstore.Store { return objstoretest.S3(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) { test(t, newFixture(t, tc.open(t))) })
	}
}

func newFixture(t *testing.T, objects objstore.Store) *fixture {
	t.Helper()
	rec := &recorder{Store: objects}
	scratch := t.TempDir()
	jobs, err := archive.New(archive.Config{Objects: rec, Scratch: scratch})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{objects: rec, jobs: jobs, scratch: scratch}
}

var home = map[string]string{
	"notes.txt":          "hello",
	"src":                "dir",
	"src/main.go":        "package main",
	"src/deep/a/b.txt":   "deep",
	"link-to-src":        "link:src/main.go",
	"src/up":             "link:../notes.txt",
	"escape":             "link:../../etc/passwd",
	"absolute":           "link:/etc/passwd",
	"src/chain":          "link:../src/up/../..", // resolves outside through src/up
	"empty":              "dir",
	"spaces in name.txt": "x",
	"c:notes":            "a name a drive letter could be read in",
	"back\\slash":        "x",
	"src/inside":         "link:../src/deep/../deep/a", // inside, through ..
	"src/via-link":       "link:../link-to-dir/b.txt",  // inside, through another link
	"link-to-dir":        "link:src/deep/a",
	"dangling":           "link:no/such/file",
	"hard":               "hard:notes.txt",
	"src/deep/hard":      "hard:notes.txt",
}

// addSpecialFiles makes a FIFO, a socket and, when the test may, a
// character device under dir, and returns their names.
func addSpecialFiles(t *testing.T, dir string) []string {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "socket"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	names := []string{"fifo", "socket"}
	if err := syscall.Mknod(filepath.Join(dir, "src", "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		names = append(names, "src/null")
	} else {
		t.Logf("no device among the special files: %v", err)
	}
	slices.Sort(names)
	return names
}

func TestArchiveRestoreRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		src := t.TempDir()
		writeTree(t, src, home)
		special := addSpecialFiles(t, src)
		key := archive.Key("ws1", "op1")
		res, err := f.jobs.Archive(ctx, key, src)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Excluded, special) {
			t.Errorf("excluded %q, want the special files %q", res.Excluded, special)
		}

		dst := t.TempDir()
		writeTree(t, dst, map[string]string{"notes.txt": "old", "extra.txt": "gone after restore", "extra/dir/f": "x", "src": "link:/tmp"})
		if err := f.jobs.Restore(ctx, key, dst); err != nil {
			t.Fatal(err)
		}
		want := tree(t, src)
		for _, name := range special {
			delete(want, name)
		}
		if diff := cmp.Diff(want, tree(t, dst)); diff != "" {
			t.Errorf("restored tree (-want +got):\n%s", diff)
		}
		if entries, _ := os.ReadDir(f.scratch); len(entries) != 0 {
			t.Errorf("scratch space not cleaned: %v", entries)
		}
	})
}

// TestContract6ArchiveJob: skip when both objects exist (HEAD check);
// otherwise tar+zstd, sha256 in .meta as sha256:{hex}, tar.zst uploaded
// before .meta; a tar.zst without .meta is incomplete and overwritten.
func TestContract6ArchiveJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		src := t.TempDir()
		writeTree(t, src, map[string]string{"a.txt": "a"})
		key := archive.Key("ws1", "op1")

		// A crashed earlier run left the archive without its commit marker.
		if err := f.objects.Store.Put(ctx, key, strings.NewReader("partial upload")); err != nil {
			t.Fatal(err)
		}
		if done, _ := f.jobs.Complete(ctx, key); done {
			t.Fatal("an archive without .meta counts as complete")
		}
		res, err := f.jobs.Archive(ctx, key, src)
		if err != nil || res.Skipped {
			t.Fatalf("Archive = %+v, %v; want a fresh upload", res, err)
		}
		if puts := f.objects.takePuts(); !slices.Equal(puts, []string{key, archive.MetaKey(key)}) {
			t.Errorf("uploads %v, want the archive then its .meta", puts)
		}
		body := objstoretest.Read(t, f.objects, key)
		if bytes.Equal(body, []byte("partial upload")) {
			t.Fatal("the incomplete archive was not overwritten")
		}
		meta := string(objstoretest.Read(t, f.objects, archive.MetaKey(key)))
		if meta != sha(body) || meta != res.Checksum {
			t.Errorf(".meta = %q, want %q", meta, sha(body))
		}

		// Complete: the HEAD check skips, even when the volume is gone.
		if err := os.RemoveAll(src); err != nil {
			t.Fatal(err)
		}
		res, err = f.jobs.Archive(ctx, key, src)
		if err != nil || !res.Skipped {
			t.Fatalf("second Archive = %+v, %v; want skipped", res, err)
		}
		if puts := f.objects.takePuts(); len(puts) != 0 {
			t.Errorf("a skipped archive uploaded %v", puts)
		}

		// A crash between the two uploads: the archive is redone.
		f.objects.failPut = func(k string) error {
			if strings.HasSuffix(k, archive.MetaSuffix) {
				return errInjected
			}
			return nil
		}
		key2 := archive.Key("ws1", "op2")
		writeTree(t, src, map[string]string{"b.txt": "b"})
		if _, err := f.jobs.Archive(ctx, key2, src); !errors.Is(err, errInjected) {
			t.Fatalf("Archive with a failing .meta upload: %v", err)
		}
		if done, _ := f.jobs.Complete(ctx, key2); done {
			t.Fatal("archive complete without its .meta")
		}
		f.objects.failPut = nil
		if res, err := f.jobs.Archive(ctx, key2, src); err != nil || res.Skipped {
			t.Fatalf("retry = %+v, %v", res, err)
		}
		if done, _ := f.jobs.Complete(ctx, key2); !done {
			t.Fatal("retry did not complete the archive")
		}

		// Nothing to archive and nothing archived: data loss, terminal.
		if _, err := f.jobs.Archive(ctx, archive.Key("ws1", "op3"), filepath.Join(src, "missing")); !errors.Is(err, archive.ErrNoSource) || !archive.Terminal(err) {
			t.Errorf("archive of a missing volume: %v, want terminal ErrNoSource", err)
		}
	})
}

// TestContract7RestoreJob: download archive and .meta, verify sha256 (a
// mismatch is terminal and overwrites nothing), extract to staging, sync
// with deletion; crash-only (a retry starts over); unsafe archives refused.
func TestContract7RestoreJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		src := t.TempDir()
		writeTree(t, src, map[string]string{"a.txt": "a", "d/b.txt": "b"})
		key := archive.Key("ws1", "op1")
		if _, err := f.jobs.Archive(ctx, key, src); err != nil {
			t.Fatal(err)
		}
		volume := t.TempDir()
		before := map[string]string{"a.txt": "local edit", "only-here.txt": "x"}
		writeTree(t, volume, before)

		t.Run("checksum mismatch", func(t *testing.T) {
			body := objstoretest.Read(t, f.objects, key)
			tampered := slices.Clone(body)
			tampered[len(tampered)/2] ^= 0xff
			_ = f.objects.Store.Put(ctx, key, bytes.NewReader(tampered))
			defer f.objects.Store.Put(ctx, key, bytes.NewReader(body))
			err := f.jobs.Restore(ctx, key, volume)
			if !errors.Is(err, archive.ErrChecksum) || !archive.Terminal(err) {
				t.Fatalf("Restore of a tampered archive: %v, want terminal ErrChecksum", err)
			}
			if diff := cmp.Diff(before, tree(t, volume)); diff != "" {
				t.Errorf("volume changed (-before +after):\n%s", diff)
			}
		})
		t.Run("missing archive", func(t *testing.T) {
			err := f.jobs.Restore(ctx, archive.Key("ws1", "nope"), volume)
			if !errors.Is(err, archive.ErrNotFound) || !archive.Terminal(err) {
				t.Fatalf("Restore of a missing archive: %v, want terminal ErrNotFound", err)
			}
		})
		t.Run("unsafe archive", func(t *testing.T) {
			bad := archive.Key("ws1", "bad")
			body := zstdOf(t, tarOf(t, file("ok.txt", "x"), symlink("evil", "../../outside"), file("evil/x", "x")))
			_ = f.objects.Store.Put(ctx, bad, bytes.NewReader(body))
			_ = f.objects.Store.Put(ctx, archive.MetaKey(bad), strings.NewReader(sha(body)))
			err := f.jobs.Restore(ctx, bad, volume)
			if !errors.Is(err, archive.ErrUnsafe) || !archive.Terminal(err) {
				t.Fatalf("Restore of an unsafe archive: %v, want terminal ErrUnsafe", err)
			}
			if diff := cmp.Diff(before, tree(t, volume)); diff != "" {
				t.Errorf("volume changed (-before +after):\n%s", diff)
			}
		})
		t.Run("crash during download, retry starts over", func(t *testing.T) {
			f.objects.failGet = func(k string) error {
				if k == key {
					return errInjected
				}
				return nil
			}
			if err := f.jobs.Restore(ctx, key, volume); !errors.Is(err, errInjected) || archive.Terminal(err) {
				t.Fatalf("Restore with a failing download: %v, want the transient error", err)
			}
			// What a killed run leaves in its scratch space is cleared by the next.
			leftover := filepath.Join(f.scratch, "restore-leftover")
			_ = os.MkdirAll(leftover, 0o700)
			f.objects.failGet = nil
			if err := f.jobs.Restore(ctx, key, volume); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tree(t, src), tree(t, volume)); diff != "" {
				t.Errorf("restored volume (-want +got):\n%s", diff)
			}
			if err := f.jobs.Restore(ctx, key, volume); err != nil {
				t.Fatalf("a second restore (crash after sync, before the marker): %v", err)
			}
			if diff := cmp.Diff(tree(t, src), tree(t, volume)); diff != "" {
				t.Errorf("volume after a second restore (-want +got):\n%s", diff)
			}
		})
	})
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		key    string
		ws, op string
		wantOK bool
	}{
		{"ws1/op1/home.tar.zst", "ws1", "op1", true},
		{"ws1/op1/home.tar.zst.meta", "ws1", "op1", true},
		{"ws1/home.tar.zst", "", "", false},
		{"ws1/op1/other", "", "", false},
		{"a/b/c/home.tar.zst", "", "", false},
	} {
		ws, op, ok := archive.ParseKey(tc.key)
		if ws != tc.ws || op != tc.op || ok != tc.wantOK {
			t.Errorf("ParseKey(%q) = %q, %q, %v", tc.key, ws, op, ok)
		}
	}
	if k := archive.Key("w", "o"); k != "w/o/home.tar.zst" || archive.MetaKey(k) != "w/o/home.tar.zst.meta" {
		t.Errorf("Key = %q", k)
	}
}
