package plugin

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCmdAddNodesCreate builds `add-nodes create` (issue #8; not built yet).
func newCmdAddNodesCreate(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "create -f nodes-config.yaml --dir OUT",
		Short: "Build the ISO that lets new hosts join the cluster [not yet implemented]",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("add-nodes create is not implemented yet")
		},
	}
}
