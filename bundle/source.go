package bundle

import (
	"context"
	"io"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
)

// DatabaseSource produces the database layer's plaintext: it writes one
// consistent dump of the database to w and says what it wrote. The PostgreSQL
// engine (bundle/pg) plugs in through a small adapter; tests use a fake.
// Dump must not close w.
type DatabaseSource interface {
	Dump(ctx context.Context, w io.Writer) (*DatabaseSummary, error)
}

// DatabaseSummary is what a DatabaseSource reports; it goes into the metadata
// and must not hold secrets (no DSN, no row content).
type DatabaseSummary struct {
	ServerVersion string
	LastMigration string
	Tables        []TableInfo
	// ClusterIDs are the clusters rows found in the database, if the engine
	// reports them.
	ClusterIDs []string
}

// DatabaseChecker strictly decodes a database layer's plaintext (for `bundle
// verify`); it reads r to EOF. Without one, verify checks only digests,
// decryption and compression of that layer.
type DatabaseChecker func(ctx context.Context, r io.Reader) error

// ResourcesSource produces the resources layer: resources.ClusterSource (an API
// server) or resources.DirSource (ABI manifest files).
type ResourcesSource interface {
	Write(ctx context.Context, w io.Writer) (*resources.Summary, error)
}
