package plugin

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
)

// dbTables holds the flags that choose what the database layer holds.
type dbTables struct {
	ExcludeTables    []string
	ExcludeTableData []string
	Deferrable       bool
}

func (d *dbTables) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&d.ExcludeTables, "db-exclude-table", nil, "Leave these tables out of the database layer entirely (\"table\" or \"schema.table\", shell patterns allowed)")
	fs.StringSliceVar(&d.ExcludeTableData, "db-exclude-table-data", pg.DefaultExcludeTables, "Keep these tables' definitions but none of their rows (assisted-service reloads the release_images cache at start)")
	fs.BoolVar(&d.Deferrable, "db-deferrable", false, "Dump in a SERIALIZABLE READ ONLY DEFERRABLE snapshot (waits until no concurrent serializable transaction can contradict it)")
}

// pgSource is the database layer's source: one consistent pg.Dump of the
// assisted-service database.
type pgSource struct {
	connString string
	opts       pg.DumpOptions
	// clusterIDs are the live clusters rows the last Dump found.
	clusterIDs []string
}

// Dump writes the dump stream to w and maps the engine's summary onto the
// bundle's. Nothing in the summary holds the DSN.
func (s *pgSource) Dump(ctx context.Context, w io.Writer) (*bundle.DatabaseSummary, error) {
	sum, err := pg.Dump(ctx, s.connString, w, s.opts)
	if err != nil {
		return nil, err
	}
	out := &bundle.DatabaseSummary{ServerVersion: sum.ServerVersion, LastMigration: sum.LastMigration}
	for _, t := range sum.Tables {
		out.Tables = append(out.Tables, bundle.TableInfo{Schema: t.Schema, Name: t.Name, Rows: t.Rows, Checksum: t.Checksum})
		if t.Name == "clusters" && t.Rows > 0 {
			if out.ClusterIDs, err = liveClusterIDs(ctx, s.connString, t.Schema); err != nil {
				return nil, err
			}
		}
	}
	s.clusterIDs = out.ClusterIDs
	return out, nil
}

// liveClusterIDs lists the clusters that are not soft-deleted, for the
// metadata (migrate mints cluster 0's token for the only one).
func liveClusterIDs(ctx context.Context, connString, schema string) ([]string, error) {
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

// databaseSource turns --db/--db-env-file into the database layer's source,
// or nil when neither is given. Errors never quote the DSN.
func databaseSource(p option.Postgres, t dbTables, log *slog.Logger) (bundle.DatabaseSource, error) {
	if !p.IsSet() {
		return nil, nil
	}
	conn, err := p.ConnString()
	if err != nil {
		return nil, err
	}
	return &pgSource{connString: conn, opts: pg.DumpOptions{
		ExcludeTables:    t.ExcludeTables,
		ExcludeTableData: t.ExcludeTableData,
		Deferrable:       t.Deferrable,
		Logger:           log,
	}}, nil
}

// checkDatabaseLayer strictly decodes a database layer (for `bundle verify`):
// every member, every table's row count and checksum.
func checkDatabaseLayer(ctx context.Context, r io.Reader) error {
	_, err := pg.Verify(ctx, r)
	return err
}
