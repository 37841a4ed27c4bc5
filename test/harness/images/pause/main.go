// Command pause is the test node's pod sandbox process (containerd's
// sandbox_image): it holds the pod's namespaces, reaps the orphans that end
// up with it as PID 1, and exits on SIGINT or SIGTERM. Built here and put in
// an image the harness writes, because the node pulls nothing from the
// internet (registry.k8s.io/pause does the same in C).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
