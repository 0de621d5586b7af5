//go:build !unix

package archive

import "io/fs"

// fileID identifies a file; without inode numbers, no file has one.
type fileID struct{}

// linkedFile reports false: hard links are only told apart on Unix.
func linkedFile(fs.FileInfo) (fileID, bool) { return fileID{}, false }
