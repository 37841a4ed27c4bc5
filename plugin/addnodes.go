package plugin

import (
	"github.com/spf13/cobra"
)

// NewCmdAddNodes builds the `add-nodes` command group (day 2).
func NewCmdAddNodes(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add-nodes",
		Short: "Add nodes to an installed cluster: build their ISO, follow them to Ready",
		Long: `Add nodes to an installed OpenShift cluster with only a kubeconfig.

"create" reads the cluster's configuration and builds, locally, the ISO (or PXE
artifacts) that boots new hosts into the cluster; "monitor" follows each host until
its Node is Ready and, when asked, approves the CSRs that provably belong to it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdAddNodesCreate(env), newCmdAddNodesMonitor(env))
	return cmd
}
