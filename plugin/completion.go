package plugin

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// NewCmdCompletion builds `completion bash|zsh|fish|powershell`.
func NewCmdCompletion(env *Env) *cobra.Command {
	o := &CompletionOptions{}
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a completion script for the given shell.

kubectl completes plugin commands through a helper named kubectl_complete-assisted
on the PATH (kubectl 1.26+); this script serves direct use of kubectl-assisted and
that helper alike.`,
		Example: env.Example(`
  # Load completion into the current bash session
  source <(kubectl-assisted completion bash)

  # Let kubectl complete "%[1]s assisted ..." (kubectl 1.26 or newer)
  printf '#!/bin/sh\nkubectl-assisted __complete "$@"\n' > ~/bin/kubectl_complete-assisted
  chmod +x ~/bin/kubectl_complete-assisted`),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
	}
	return wire(env, cmd, o)
}

// CompletionOptions holds the inputs of `completion`.
type CompletionOptions struct {
	cmdEnv
	Shell string
}

// Complete takes the shell.
func (o *CompletionOptions) Complete(args []string) error {
	o.Shell = args[0]
	return nil
}

// Validate checks the shell (cobra's ValidArgs did too; this keeps the check
// with the options).
func (o *CompletionOptions) Validate() error {
	switch o.Shell {
	case "bash", "zsh", "fish", "powershell":
		return nil
	}
	return fmt.Errorf("unsupported shell %q: use bash, zsh, fish or powershell", o.Shell)
}

// Run prints the script.
func (o *CompletionOptions) Run(context.Context) error {
	root, out := o.cmd.Root(), o.env.Streams.Out
	switch o.Shell {
	case "bash":
		return root.GenBashCompletionV2(out, true)
	case "zsh":
		return root.GenZshCompletion(out)
	case "fish":
		return root.GenFishCompletion(out, true)
	}
	return root.GenPowerShellCompletionWithDesc(out)
}
