package restore

import (
	"errors"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/kubekeys"
	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

// Resource sources of Result.ResourcesFrom.
const (
	ResourcesFromBundle    = "bundle"    // the bundle's exported CRs
	ResourcesFromRecreated = "recreated" // built from the restored rows
	ResourcesSkipped       = "skipped"
)

// Result is what Run did. Its JSON form is the CLI's -o json result; it never
// holds secrets (Secret data, passwords, tokens, keys).
type Result struct {
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	Namespace string `json:"namespace"`
	// DryRun is none, client or server; a drift check reports "client".
	DryRun resources.DryRun `json:"dryRun"`
	// Resumed is true when an earlier run of this bundle left a journal.
	Resumed       bool   `json:"resumed"`
	ResourcesFrom string `json:"resourcesFrom"`
	// Phases are the journal's phases in order, with what each did (or what
	// an earlier run recorded for a phase that was already done).
	Phases  []journal.Outcome `json:"phases"`
	Receipt *journal.Receipt  `json:"receipt,omitempty"`

	Database  *DatabaseResult    `json:"database,omitempty"`
	Files     *files.Summary     `json:"files,omitempty"`
	Auth      *AuthResult        `json:"auth,omitempty"`
	Resources *resources.Report  `json:"resources,omitempty"`
	KubeKeys  *kubekeys.Result   `json:"kubeKeys,omitempty"`
	Recreated *recreate.KubeKeys `json:"recreated,omitempty"`
	// Drift lists where re-created resources disagree with the rows.
	Drift []recreate.Difference `json:"drift,omitempty"`
	// ClusterIDs are the assisted-service clusters of the bundle.
	ClusterIDs []string `json:"clusterIDs,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`

	key *auth.KeyPair
}

// DatabaseResult is what the database phase loaded.
type DatabaseResult struct {
	Tables int   `json:"tables"`
	Rows   int64 `json:"rows"`
	Bytes  int64 `json:"bytes"`
	// RolledBack is true for a dry run or drift check: the rows were loaded
	// and checked, then the transaction was rolled back.
	RolledBack bool `json:"rolledBack,omitempty"`
	// NotLoaded is true for a client dry run: the layer was verified and the
	// target checked in a read-only transaction; nothing was sent or loaded.
	NotLoaded bool `json:"notLoaded,omitempty"`
	// ImageURLsReset counts the infra-envs whose discovery image was marked
	// not generated, so cluster 0's service gives them ISO URLs on its own
	// image service (node 0's are gone).
	ImageURLsReset int64 `json:"imageURLsReset,omitempty"`
}

// AuthResult says what the auth phase found or created.
type AuthResult struct {
	PostgresSecretCreated  bool `json:"postgresSecretCreated"`
	LocalAuthSecretCreated bool `json:"localAuthSecretCreated"`
	// LocalAuthKey says whose key cluster 0's local-auth Secret holds: node0
	// (carried in the bundle: node 0's tokens keep working), node0-existing
	// (already there from an earlier run), generated (node 0's tokens do not
	// verify) or existing (a key cluster 0 already had, kept).
	LocalAuthKey string `json:"localAuthKey,omitempty"`
}

// ErrNoKey is returned by ClusterToken when no auth phase ran or was resumed
// (dry runs, drift checks).
var ErrNoKey = errors.New("the restore did not load the local-auth key")

// ClusterToken mints a token with the cluster_id claim, signed with the
// local-auth key cluster 0's service will use: the token the
// assisted-installer-controller needs after the switchover.
func (r *Result) ClusterToken(clusterID string, o auth.MintOptions) (auth.Token, error) {
	if r.key == nil {
		return auth.Token{}, ErrNoKey
	}
	return r.key.MintClusterToken(clusterID, o)
}

// LocalAuthKey is the local-auth key pair, or nil (see ClusterToken).
func (r *Result) LocalAuthKey() *auth.KeyPair { return r.key }
