package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	// Auth providers (exec, oidc, ...) that kubeconfigs of real clusters use.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
)

const rootLong = `Carry the ephemeral assisted-service of an agent-based install into cluster 0,
and add nodes to installed OpenShift clusters.

Migration: "bundle create" captures node 0's database, file storage and resources as
one encrypted OCI artifact; "restore" turns it into cluster 0's assisted-service state
before that service starts; "migrate" does both and the hand-over in one command.

Day 2: "add-nodes create" builds the ISO that lets new hosts join a cluster, from a
kubeconfig alone; "add-nodes monitor" follows them until they are Ready.`

// NewCmdRoot builds the root command with every subcommand. The same binary serves
// `kubectl assisted` and `oc assisted`; help text names the one that was used.
func NewCmdRoot(streams genericiooptions.IOStreams) *cobra.Command {
	caller := CallerName()
	kube := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:   "assisted",
		Short: "Move assisted-service state into cluster 0 and add nodes on day 2",
		Long:  rootLong,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: caller + " assisted",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		// Only commands that talk to a cluster add the kube flags (see kubeFlags).
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return clierr.Usage(c, err)
	})

	env := &Env{Streams: streams, Kube: kube, Caller: caller}
	cmd.AddCommand(
		NewCmdVersion(env),
		NewCmdCompletion(env),
		NewCmdAddNodes(env),
		NewCmdWaitFor(env),
		NewCmdSwitchover(env),
		NewCmdBundle(env),
		NewCmdRestore(env),
		NewCmdMigrate(env),
		NewCmdAtReboot(env),
	)
	usageArgs(cmd)
	return cmd
}

// usageArgs makes a wrong number or kind of positional arguments a usage error
// (exit 2, pointer to --help) in every command, as a bad flag is.
func usageArgs(cmd *cobra.Command) {
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return clierr.Usage(c, err)
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

// Env is what every command constructor receives: the streams, the shared kube
// configuration flags (added to a command only where it talks to a cluster) and the
// name the user typed ("kubectl" or "oc").
type Env struct {
	Streams genericiooptions.IOStreams
	Kube    *genericclioptions.ConfigFlags
	Caller  string
}

// Example fills %[1]s in an example block with "kubectl" or "oc".
func (e *Env) Example(s string) string {
	return strings.TrimSpace(fmt.Sprintf(s, e.Caller))
}

// Execute runs the root command and turns its error into one clear message on
// stderr and an exit code (see clierr.ExitCode).
func Execute(ctx context.Context, cmd *cobra.Command, streams genericiooptions.IOStreams) int {
	c, err := cmd.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var ce *clierr.Error
	if !errors.As(err, &ce) && strings.HasPrefix(err.Error(), "unknown command ") {
		err = clierr.Usage(c, err) // cobra's own, for the root's subcommands
	}
	if errors.Is(err, clierr.ErrSilent) {
		return clierr.ExitCode(err)
	}
	clierr.Print(streams.ErrOut, err)
	return clierr.ExitCode(err)
}
