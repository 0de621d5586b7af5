package archive

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Write writes the tree under src to w as a zstd-compressed tar stream, in
// lexical order, with names relative to src. It leaves out what extraction
// would refuse: special files (devices, FIFOs, sockets) and symbolic links
// that are absolute or resolve outside src. It returns the names left out.
func Write(ctx context.Context, w io.Writer, src string) (excluded []string, err error) {
	type entry struct {
		rel  string
		path string
		info fs.FileInfo
	}
	var entries []entry
	links := map[string]string{}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode().IsRegular(), info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			links[rel] = filepath.ToSlash(target)
		default:
			excluded = append(excluded, rel)
			return nil
		}
		entries = append(entries, entry{rel: rel, path: p, info: info})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: walking %s: %w", src, err)
	}
	// Leave out links that resolve outside src; leaving one out can change
	// how others resolve, so repeat until none is left out.
	for changed := true; changed; {
		changed = false
		for name := range links {
			if resolveInside(links, name) != nil {
				delete(links, name)
				excluded = append(excluded, name)
				changed = true
			}
		}
	}

	enc, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("archive: zstd: %w", err)
	}
	tw := tar.NewWriter(enc)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			enc.Close()
			return nil, err
		}
		target, isLink := links[e.rel]
		if e.info.Mode()&fs.ModeSymlink != 0 && !isLink {
			continue // excluded above
		}
		if err := writeEntry(tw, e.rel, e.path, e.info, target); err != nil {
			enc.Close()
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		enc.Close()
		return nil, fmt.Errorf("archive: tar: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("archive: zstd: %w", err)
	}
	return excluded, nil
}

func writeEntry(tw *tar.Writer, rel, p string, info fs.FileInfo, target string) error {
	hdr, err := tar.FileInfoHeader(info, target)
	if err != nil {
		return fmt.Errorf("archive: %s: %w", rel, err)
	}
	hdr.Name = rel
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
	hdr.Format = tar.FormatPAX
	if strings.ContainsRune(rel, 0) {
		return fmt.Errorf("archive: %q: NUL in name", rel)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive: %s: %w", rel, err)
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("archive: %s: %w", rel, err)
	}
	defer f.Close()
	if _, err := io.CopyN(tw, f, info.Size()); err != nil {
		return fmt.Errorf("archive: %s (changed while archived?): %w", rel, err)
	}
	return nil
}
