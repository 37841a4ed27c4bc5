//go:build !linux

package pipe

import "os"

// Preallocate does nothing here (see prealloc_linux.go).
func Preallocate(*os.File, int64) error { return nil }
