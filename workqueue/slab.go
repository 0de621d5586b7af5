package workqueue

// chunkLen is the number of elements of a full slab chunk.
const (
	chunkBits = 9
	chunkLen  = 1 << chunkBits
)

// slab is a growable array that holds its elements in chunks of chunkLen:
// growing it past the first chunk allocates a chunk and copies nothing, and
// only its last chunk has room to spare. A slice would instead copy, and
// leave to the collector, several times its final size as it grows. The
// first chunk starts small and grows like a slice, so a queue that holds few
// keys stays small.
type slab[E any] struct {
	chunks [][]E
	n      int32 // elements in use
}

// at returns the element i, which must be below n.
func (s *slab[E]) at(i int32) *E {
	return &s.chunks[i>>chunkBits][i&(chunkLen-1)]
}

// push appends e and returns its index.
func (s *slab[E]) push(e E) int32 {
	i := s.n
	c := int(i >> chunkBits)
	if c == len(s.chunks) {
		size := chunkLen
		if c == 0 {
			size = 16
		}
		s.chunks = append(s.chunks, make([]E, 0, size))
	}
	s.chunks[c] = append(s.chunks[c], e)
	s.n++
	return i
}
