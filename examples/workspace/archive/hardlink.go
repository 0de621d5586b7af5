package archive

import "io/fs"

// hardLinks remembers, for each regular file a tree holds under more than one
// name, the first of those names a walk met.
type hardLinks map[fileID]string

// first returns the name under which the regular file rel (with Lstat info)
// was met first, or records rel as that name and returns false. It returns
// false for anything but a regular file: a symbolic link with several names
// is archived and synced as that many links.
func (h hardLinks) first(rel string, info fs.FileInfo) (string, bool) {
	id, ok := linkedFile(info)
	if !ok || !info.Mode().IsRegular() {
		return "", false
	}
	if name, ok := h[id]; ok {
		return name, true
	}
	h[id] = rel
	return "", false
}
