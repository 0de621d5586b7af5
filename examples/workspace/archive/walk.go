package archive

import (
	"cmp"
	"context"
	"io/fs"
	"os"
	"slices"
)

// walk calls fn for every entry of the tree under root but root itself, in
// lexical order, each directory before its contents, with the entry's slash
// path relative to root and its Lstat info. It follows no symbolic link, and
// it reaches every entry through root, component by component, so a path of
// any length is walked and nothing outside root is ever read. When fn returns
// [fs.SkipDir] the walk leaves out the entry's contents; any other error
// stops it. A cancelled ctx stops it with ctx.Err().
func walk(ctx context.Context, root *os.Root, fn func(rel string, info fs.FileInfo) error) error {
	return walkDir(ctx, root, "", fn)
}

func walkDir(ctx context.Context, root *os.Root, dir string, fn func(rel string, info fs.FileInfo) error) error {
	f, err := root.Open(cmp.Or(dir, "."))
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := name
		if dir != "" {
			rel = dir + "/" + name
		}
		info, err := root.Lstat(rel)
		if err != nil {
			return err
		}
		switch err := fn(rel, info); {
		case err == fs.SkipDir:
		case err != nil:
			return err
		case info.IsDir():
			if err := walkDir(ctx, root, rel, fn); err != nil {
				return err
			}
		}
	}
	return nil
}
