//go:build unix

package archive

import (
	"io/fs"
	"syscall"
)

// fileID identifies a file on a machine: its device and inode numbers.
type fileID struct{ dev, ino uint64 }

// linkedFile returns the identity of the file info describes when it has
// more than one link.
func linkedFile(info fs.FileInfo) (fileID, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}
