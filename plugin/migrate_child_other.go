//go:build !linux

package plugin

import "os/exec"

// setChildDiesWithParent: only Linux can tie a child's life to its parent's.
func setChildDiesWithParent(*exec.Cmd) {}
