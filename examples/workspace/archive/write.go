package archive

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/tendhq/tend/examples/internal/ctxio"
)

// Write writes the tree under the directory src to w as a zstd-compressed
// tar stream (PAX format), in lexical order, with names relative to src:
// directories, regular files, hard links between them and symbolic links
// (whatever their target), with their permission bits. It reads src through
// an [os.Root], component by component: paths of any length are archived,
// and nothing outside src is read even if src changes under it.
//
// It leaves out special files (devices, FIFOs, sockets), which a workspace's
// home does not keep across a stop, and returns their names, relative to
// src, in the order met. [ExtractTar] accepts every archive Write makes and
// restores the tree from it.
//
// A cancelled ctx stops the archive within one copy buffer
// (32 KiB), even inside a large file.
func Write(ctx context.Context, w io.Writer, src string) (excluded []string, err error) {
	root, err := os.OpenRoot(src)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer root.Close()
	enc, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("archive: zstd: %w", err)
	}
	tw := tar.NewWriter(enc)
	links := hardLinks{}
	err = walk(ctx, root, func(rel string, info fs.FileInfo) error {
		if !info.IsDir() && !info.Mode().IsRegular() && info.Mode()&fs.ModeSymlink == 0 {
			excluded = append(excluded, rel)
			return nil
		}
		return writeEntry(ctx, tw, root, rel, info, links)
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

// writeEntry writes the directory, regular file or symbolic link rel of root
// to tw; a regular file met before under another name is written as a hard
// link to that name.
func writeEntry(ctx context.Context, tw *tar.Writer, root *os.Root, rel string, info fs.FileInfo, links hardLinks) error {
	var target string
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if target, err = root.Readlink(rel); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(info, target)
	if err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	hdr.Name = rel
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
	hdr.Format = tar.FormatPAX
	first, linked := links.first(rel, info)
	if linked {
		hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	if !info.Mode().IsRegular() || linked {
		return nil
	}
	f, err := root.Open(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(tw, ctxio.Reader(ctx, f), info.Size()); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%q (changed while archived?): %w", rel, err)
	}
	return nil
}
