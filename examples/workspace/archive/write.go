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

	"github.com/tendhq/tend/examples/internal/ctxio"
)

// Write writes the tree under src to w as a zstd-compressed tar stream, in
// lexical order, with names relative to src: directories, regular files and
// symbolic links (whatever their target), with their permission bits. It
// leaves out special files (devices, FIFOs, sockets), which a workspace's home
// does not keep across a stop, and returns their names. [ExtractTar] accepts
// every archive Write makes and restores the tree from it.
//
// A cancelled ctx stops the archive within one copy buffer, even inside a
// large file.
func Write(ctx context.Context, w io.Writer, src string) (excluded []string, err error) {
	enc, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("archive: zstd: %w", err)
	}
	tw := tar.NewWriter(enc)
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
		var target string
		switch {
		case info.Mode().IsRegular(), info.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			excluded = append(excluded, rel)
			return nil
		}
		return writeEntry(ctx, tw, rel, p, info, target)
	})
	if err != nil {
		discard(enc)
		return nil, fmt.Errorf("archive: writing %s: %w", src, err)
	}
	if err := tw.Close(); err != nil {
		discard(enc)
		return nil, fmt.Errorf("archive: tar: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("archive: zstd: %w", err)
	}
	return excluded, nil
}

// discard releases an encoder whose output is abandoned, without writing
// what it still holds.
func discard(enc *zstd.Encoder) {
	enc.Reset(io.Discard)
	enc.Close()
}

func writeEntry(ctx context.Context, tw *tar.Writer, rel, p string, info fs.FileInfo, target string) error {
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
	if _, err := io.CopyN(tw, ctxio.Reader(ctx, f), info.Size()); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("archive: %s (changed while archived?): %w", rel, err)
	}
	return nil
}
