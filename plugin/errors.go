package plugin

import (
	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
)

// usageErr marks err as a usage error of cmd (exit code 2, pointer to --help);
// for commands not yet on the Command shape (migrate, bundle create).
func usageErr(cmd *cobra.Command, err error) error { return clierr.Usage(cmd, err) }
