package storagejob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tendhq/tend/examples/workspace/archive"
	"github.com/tendhq/tend/examples/workspace/objstore"
	"github.com/tendhq/tend/examples/workspace/storagejob"
)

// main runs the job program with args and env, returning its exit code and
// what it wrote.
func runMain(args []string, env map[string]string) (int, string) {
	var out bytes.Buffer
	code := storagejob.Main(context.Background(), args, func(k string) string { return env[k] }, &out)
	return code, out.String()
}

// TestMainArchiveRestore: an archive job writes the volume to the archive's
// URL, a second one finds it complete, and a restore job fills an empty
// volume from it; each exits 0.
func TestMainArchiveRestore(t *testing.T) {
	dir := t.TempDir()
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	for _, d := range []string{src, dst} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := archive.Key("w1", "op1")
	env := map[string]string{storagejob.EnvArchiveURL: objects.URL(key)}
	scratch := []string{"-scratch", t.TempDir()}
	for i, want := range []string{"bytes", "complete already"} {
		code, out := runMain(append([]string{storagejob.Archive, "-data", src}, scratch...), env)
		if code != storagejob.ExitOK || !strings.Contains(out, want) {
			t.Fatalf("archive run %d: exit %d, %q; want 0 and %q", i+1, code, out, want)
		}
	}
	code, out := runMain(append([]string{storagejob.Restore, "-data", dst}, scratch...), env)
	if code != storagejob.ExitOK {
		t.Fatalf("restore: exit %d, %q", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "notes.txt")); string(b) != "hello" {
		t.Fatalf("restored file %q, %v", b, err)
	}
}

// TestMainExitCodes: a malformed invocation and a failure no run fixes exit
// 2, naming what is wrong; a failure a new run may not meet exits 1.
func TestMainExitCodes(t *testing.T) {
	dir := t.TempDir()
	objects, err := objstore.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	key := archive.Key("w1", "op1")
	data := []string{"-data", t.TempDir(), "-scratch", t.TempDir()}
	url := map[string]string{storagejob.EnvArchiveURL: objects.URL(key)}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		says string
	}{
		{"no command", nil, url, storagejob.ExitTerminal, "command"},
		{"unknown command", []string{"unpack"}, url, storagejob.ExitTerminal, `"unpack"`},
		{"unknown flag", []string{storagejob.Archive, "-fast"}, url, storagejob.ExitTerminal, "-fast"},
		{"extra argument", append([]string{storagejob.Archive, "more"}, data...), url, storagejob.ExitTerminal, "more"},
		{"no URL", append([]string{storagejob.Archive}, data...), nil, storagejob.ExitTerminal, storagejob.EnvArchiveURL},
		{"s3 without endpoint", append([]string{storagejob.Archive}, data...),
			map[string]string{storagejob.EnvArchiveURL: "s3://bucket/" + key}, storagejob.ExitTerminal, storagejob.EnvEndpoint},
		{"missing archive", append([]string{storagejob.Restore}, data...), url, storagejob.ExitTerminal, key},
		{"unreachable store", append([]string{storagejob.Archive}, data...),
			map[string]string{storagejob.EnvArchiveURL: "s3://bucket/" + key, storagejob.EnvEndpoint: "http://127.0.0.1:1"},
			storagejob.ExitRetry, "127.0.0.1:1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runMain(tt.args, tt.env)
			if code != tt.code || !strings.Contains(out, tt.says) {
				t.Fatalf("exit %d, %q; want %d, saying %q", code, out, tt.code, tt.says)
			}
		})
	}
}

// TestOpen: an archive's URL names its store and key; anything else is a
// usage error.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	key := archive.Key("w1", "op1")
	dir := t.TempDir()
	s, k, release, err := storagejob.Open(ctx, "file://"+dir+"/"+key, storagejob.Credentials{})
	if err != nil || k != key {
		t.Fatalf("file URL: key %q, %v", k, err)
	}
	release()
	if d, ok := s.(*objstore.Dir); !ok || d.URL(key) != "file://"+dir+"/"+key {
		t.Fatalf("file URL opened %T %v", s, s)
	}
	for _, bad := range []string{
		"", "::", "http://host/" + key, "s3:///" + key, "s3://bucket/w1/op1", "s3://bucket/" + key + "/more",
		"file://host/dir/" + key, "file:///" + key, "file:///dir/w1/op1/other.tar",
	} {
		if _, _, _, err := storagejob.Open(ctx, bad, storagejob.Credentials{Endpoint: "http://127.0.0.1:1"}); !errors.Is(err, storagejob.ErrUsage) {
			t.Errorf("Open(%q) = %v, want ErrUsage", bad, err)
		}
	}
}

// A job's environment: the archive's URL and the credentials that are set.
func ExampleEnv() {
	env := storagejob.Env("s3://archives/w1/op1/home.tar.zst", storagejob.Credentials{
		Endpoint: "http://127.0.0.1:7070", AccessKey: "job", SecretKey: "job-secret"})
	for _, kv := range env {
		fmt.Println(kv)
	}
	// Output:
	// ARCHIVE_URL=s3://archives/w1/op1/home.tar.zst
	// AWS_ACCESS_KEY_ID=job
	// AWS_ENDPOINT_URL=http://127.0.0.1:7070
	// AWS_SECRET_ACCESS_KEY=job-secret
}
