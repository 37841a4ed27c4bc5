// Package pgsource is the database layer's source for bundle.Create: one
// consistent pg.Dump of assisted-service's PostgreSQL database, mapped onto
// bundle.DatabaseSummary, with the live clusters it holds.
package pgsource

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
)

// Source is a bundle.DatabaseSource. Nothing it reports holds the
// connection string.
type Source struct {
	ConnString string
	Options    pg.DumpOptions
}

// Dump writes the dump stream to w and maps the engine's summary onto the
// bundle's; ClusterIDs are the clusters rows that are not soft-deleted.
func (s *Source) Dump(ctx context.Context, w io.Writer) (*bundle.DatabaseSummary, error) {
	sum, err := pg.Dump(ctx, s.ConnString, w, s.Options)
	if err != nil {
		return nil, err
	}
	out := &bundle.DatabaseSummary{ServerVersion: sum.ServerVersion, LastMigration: sum.LastMigration}
	for _, t := range sum.Tables {
		out.Tables = append(out.Tables, bundle.TableInfo{Schema: t.Schema, Name: t.Name, Rows: t.Rows, Checksum: t.Checksum})
		if t.Name == "clusters" && t.Rows > 0 {
			if out.ClusterIDs, err = LiveClusterIDs(ctx, s.ConnString, t.Schema); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// LiveClusterIDs lists the clusters of schema that are not soft-deleted.
func LiveClusterIDs(ctx context.Context, connString, schema string) ([]string, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT id::text FROM "+pgx.Identifier{schema, "clusters"}.Sanitize()+" WHERE deleted_at IS NULL ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
