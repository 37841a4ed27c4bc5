package plugin

import (
	"github.com/spf13/cobra"
)

const bundleLong = `Capture node 0's assisted-service state (database, file storage, resources) as one
OCI artifact, and read it back anywhere.

A bundle is an OCI image manifest with artifactType application/vnd.kubectl-assisted.bundle:
a metadata config blob (no secrets) and one zstd-compressed, age-encrypted layer per part.
It lives in a registry (HOST[:PORT]/REPO[:TAG|@DIGEST]), an OCI layout directory
(oci:DIR[:TAG]) or a tar of one (oci-archive:FILE[:TAG]). docs/bundle-format.md is the spec.`

// NewCmdBundle builds the `bundle` command group.
func NewCmdBundle(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Create, inspect and verify the encrypted OCI bundle of node 0's state",
		Long:  bundleLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		NewCmdBundleCreate(env),
		NewCmdBundleInspect(env),
		NewCmdBundleVerify(env),
		NewCmdBundleExtract(env),
	)
	return cmd
}
