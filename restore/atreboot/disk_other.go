//go:build !unix

package atreboot

import "errors"

var errNoStatfs = errors.New("not supported on this platform: node 0 runs Linux")

// FreeSpace is not available off Unix.
func FreeSpace(string) (int64, error) { return 0, errNoStatfs }

// Writable is not available off Unix.
func Writable(string) error { return errNoStatfs }
