package plugin

import (
	"os/exec"
	"syscall"
)

// setChildDiesWithParent makes the kernel kill the child when migrate dies, so
// a killed migrate never leaves a restore running on its own.
func setChildDiesWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
