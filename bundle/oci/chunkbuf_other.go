//go:build !unix

package oci

func allocChunk(size int) []byte { return make([]byte, size) }

func freeChunk([]byte) {}
