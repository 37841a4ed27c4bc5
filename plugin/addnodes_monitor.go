package plugin

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCmdAddNodesMonitor builds `add-nodes monitor` (issue #9; not built yet).
func newCmdAddNodesMonitor(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "monitor -f nodes-config.yaml",
		Short: "Follow new hosts until they are Ready nodes [not yet implemented]",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("add-nodes monitor is not implemented yet")
		},
	}
}
