package plugin

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pgsource"
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
	return &pgsource.Source{ConnString: conn, Options: pg.DumpOptions{
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
