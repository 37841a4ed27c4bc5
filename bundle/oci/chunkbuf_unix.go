//go:build unix

package oci

import "syscall"

// allocChunk maps size bytes of anonymous memory, or falls back to the heap.
func allocChunk(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, size)
	}
	return b
}

func freeChunk(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		_ = err // a heap buffer (the fallback): the collector takes it
	}
}
