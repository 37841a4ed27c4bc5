// Command kubectl-assisted is the kubectl/oc plugin for the agent-based installer:
// it carries assisted-service state from the rendezvous node into cluster 0 and
// adds nodes to installed clusters. See `kubectl assisted --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-assisted/kubectl-assisted/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := plugin.Execute(ctx, plugin.NewCmdRoot(streams), streams)
	stop()
	os.Exit(code)
}
