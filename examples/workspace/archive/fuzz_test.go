package archive_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/tendhq/tend/examples/workspace/archive"
)

// spec encodes nodes as the input of FuzzRoundTrip: for each, its kind, its
// mode in two bytes, its name, NUL, its data, NUL.
func spec(nodes ...node) []byte {
	var b []byte
	for _, n := range nodes {
		b = append(b, n.kind)
		b = binary.BigEndian.AppendUint16(b, uint16(n.mode&fs.ModePerm))
		b = append(append(b, n.name...), 0)
		b = append(append(b, n.data...), 0)
	}
	return b
}

// parseSpec decodes the nodes spec encodes, from any bytes: a field cut
// short ends at the end of b.
func parseSpec(b []byte) []node {
	field := func() string {
		s, rest, _ := bytes.Cut(b, []byte{0})
		b = rest
		return string(s)
	}
	var nodes []node
	for len(b) >= 3 && len(nodes) < 100 {
		n := node{kind: b[0], mode: fs.FileMode(binary.BigEndian.Uint16(b[1:3])) & fs.ModePerm}
		b = b[3:]
		n.name, n.data = field(), field()
		nodes = append(nodes, n)
	}
	return nodes
}

// legalTrees are trees a workspace may hold that archives once refused or
// that are easy to get wrong, as the seeds of the fuzz targets.
var legalTrees = [][]node{
	{ // names a drive letter or a separator could be read in
		{kind: 'f', name: "c:notes", mode: 0o644, data: "a drive letter?"},
		{kind: 'd', name: "C:", mode: 0o755},
		{kind: 'f', name: "C:/b:c", mode: 0o600, data: "x"},
		{kind: 'f', name: `back\slash`, mode: 0o644, data: "x"},
		{kind: 'l', name: `d:\x`, data: "c:notes"},
	},
	{ // any byte but '/' and NUL, leading '-', 255 bytes
		{kind: 'f', name: "new\nline", mode: 0o644},
		{kind: 'f', name: "\xff\xfe\x80", mode: 0o644, data: "invalid UTF-8"},
		{kind: 'f', name: "-rf", mode: 0o755, data: "#!/bin/sh"},
		{kind: 'd', name: "--", mode: 0o700},
		{kind: 'f', name: strings.Repeat("n", 255), mode: 0o644, data: "long"},
		{kind: 'f', name: " \t*?'\"$~", mode: 0o644},
	},
	{ // a path longer than the kernel takes whole
		{kind: 'd', name: strings.Repeat(strings.Repeat("d", 250)+"/", 22) + "leaf", mode: 0o755},
		{kind: 'f', name: strings.Repeat(strings.Repeat("d", 250)+"/", 22) + "leaf/f", mode: 0o644, data: "deep"},
	},
	{ // empty directories and modes
		{kind: 'd', name: "empty", mode: 0o500},
		{kind: 'd', name: "closed", mode: 0o000},
		{kind: 'f', name: "closed/f", mode: 0o000, data: "x"},
		{kind: 'd', name: "open", mode: 0o777},
		{kind: 'f', name: "open/x", mode: 0o751},
	},
	{ // symbolic links: chains, through ".." staying inside, to
		// directories, dangling, absolute, leading out, looping
		{kind: 'd', name: "dir/sub", mode: 0o755},
		{kind: 'f', name: "dir/sub/f", mode: 0o644, data: "target"},
		{kind: 'l', name: "a", data: "b"},
		{kind: 'l', name: "b", data: "dir/sub/../sub/f"},
		{kind: 'l', name: "todir", data: "dir/sub"},
		{kind: 'l', name: "dir/up", data: "../todir/../dir"},
		{kind: 'l', name: "dir/sub/via", data: "../up/sub/f"},
		{kind: 'l', name: "dangling", data: "no/such/file"},
		{kind: 'l', name: "abs", data: "/etc/passwd"},
		{kind: 'l', name: "out", data: "../../outside"},
		{kind: 'l', name: "loop", data: "loop"},
	},
	{ // hard links
		{kind: 'f', name: "h1", mode: 0o640, data: "shared"},
		{kind: 'h', name: "h2", data: "h1"},
		{kind: 'd', name: "d", mode: 0o755},
		{kind: 'h', name: "d/h3", data: "h1"},
	},
}

// FuzzRoundTrip builds the tree a fuzzed spec describes (see [spec]), which a
// Linux workspace may hold, and checks that its archive restores it exactly
// and writes nothing beside the staging directory and the volume.
func FuzzRoundTrip(f *testing.F) {
	for _, nodes := range legalTrees {
		f.Add(spec(nodes...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		src, cleanup := tempDir(t, "src")
		defer cleanup()
		build(t, src, parseSpec(b))
		checkRoundTrip(t, src, true)
	})
}

// ownArchive returns the archive Write makes of the tree of nodes.
func ownArchive(t testing.TB, nodes []node) []byte {
	src, cleanup := tempDir(t, "src")
	defer cleanup()
	build(t, src, nodes)
	var buf bytes.Buffer
	if _, err := archive.Write(context.Background(), &buf, src); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// untar returns the tar stream a tar.zst stream holds.
func untar(t testing.TB, b []byte) []byte {
	dec, err := zstd.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out, err := io.ReadAll(dec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzExtract extracts arbitrary bytes, as a tar stream and as a tar.zst
// stream, and checks that nothing is ever written outside the target
// directory; when the extraction succeeds, the archive Write makes of the
// tree it made must extract to that very tree.
func FuzzExtract(f *testing.F) {
	for _, nodes := range legalTrees {
		own := ownArchive(f, nodes)
		f.Add(own)
		f.Add(untar(f, own))
	}
	for _, hdrs := range hostileArchives {
		f.Add(tarOf(f, hdrs...))
	}
	for _, tc := range acceptedArchives {
		f.Add(tarOf(f, tc.entries...))
	}
	f.Add(zstdOf(f, tarOf(f, file("a/b", "c"), symlink("a/l", "../../sentinel"), file("a/l/evil", "x"))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := archive.Limits{MaxBytes: 1 << 20, MaxEntries: 200}
		for _, extract := range []func(dir string) error{
			func(dir string) error {
				return archive.ExtractTar(context.Background(), bytes.NewReader(data), dir, lim)
			},
			func(dir string) error { return archive.Extract(context.Background(), bytes.NewReader(data), dir, lim) },
		} {
			parent, target, sentinel, cleanup := sandbox(t)
			err := extract(target)
			checkContained(t, parent, sentinel)
			if err == nil && os.Geteuid() == 0 { // as any other user, the tree may hold what its owner cannot read
				checkRoundTrip(t, target, false) // FuzzRoundTrip covers Sync
			}
			cleanup()
		}
	})
}
