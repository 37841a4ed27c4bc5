package plugin

import (
	"fmt"

	"github.com/spf13/cobra"
)

// NewCmdCompletion builds `completion bash|zsh|fish|powershell`.
func NewCmdCompletion(env *Env) *cobra.Command {
	return &cobra.Command{
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
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			out := env.Streams.Out
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return fmt.Errorf("unsupported shell %q", args[0])
		},
	}
}
