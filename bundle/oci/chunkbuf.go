package oci

import "sync"

// chunkBuffers are the buffers of a ranged sequence: at most n of size
// bytes, made when first needed and released together by free. Where the
// system allows they are mapped outside the Go heap (chunkbuf_unix.go), so
// that they do not raise the garbage collector's target, which is twice what
// is live (GOGC=100): long-lived buffers in the heap would let that much more
// garbage build up before each collection.
type chunkBuffers struct {
	mu   sync.Mutex
	n    int
	size int
	made [][]byte
}

func newChunkBuffers(n, size int) *chunkBuffers { return &chunkBuffers{n: n, size: size} }

// get makes one more buffer; the caller keeps at most n in use.
func (b *chunkBuffers) get() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	buf := allocChunk(b.size)
	b.made = append(b.made, buf)
	return buf
}

// free releases every buffer made; none may be used after.
func (b *chunkBuffers) free() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, buf := range b.made {
		freeChunk(buf)
	}
	b.made = nil
}
