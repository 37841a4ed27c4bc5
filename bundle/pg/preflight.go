package pg

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
)

// PreflightOptions choose what Preflight accepts.
type PreflightOptions struct {
	// Replace accepts a target that holds objects (Restore would drop them).
	Replace bool
}

// Preflight checks, without writing anything to the target, what can be
// known about restoring the stream r into the database at connString: it
// reads the stream's header and pre-data (checked as Verify checks them; the
// rest of the stream is not read), then, in one READ ONLY transaction that it
// rolls back, checks that the target is empty (unless opts.Replace), that
// every extension the stream creates is available there, and that the user
// may create the schemas the stream creates. No statement of the stream is
// sent to the server: the queries are fixed and the stream's names travel as
// parameters. This is what a client-side dry run does instead of loading.
func Preflight(ctx context.Context, connString string, r io.Reader, opts PreflightOptions) error {
	sr := newStreamReader(r)
	if err := sr.readHeader(); err != nil {
		return err
	}
	pre, err := sr.readPreData()
	if err != nil {
		return err
	}
	var schemas, extensions []string
	for _, o := range pre {
		switch o.Kind {
		case "SCHEMA":
			schemas = append(schemas, o.Name)
		case "EXTENSION":
			extensions = append(extensions, o.Name)
		}
	}

	tx, done, err := readOnlyTarget(ctx, connString)
	if err != nil {
		return err
	}
	defer done()
	if err := prepareTarget(ctx, tx, false); err != nil && !opts.Replace {
		return err
	}
	if len(extensions) > 0 {
		rows, err := tx.Query(ctx, `SELECT e FROM pg_catalog.unnest($1::text[]) e
			WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_available_extensions a WHERE a.name = e) ORDER BY e`, extensions)
		if err != nil {
			return fmt.Errorf("inspect target database: %w", err)
		}
		missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("inspect target database: %w", err)
		}
		if len(missing) > 0 {
			return fmt.Errorf("the target server does not have the extension(s) %s that the bundle's schema uses: install them on the target server", strings.Join(missing, ", "))
		}
	}
	rows, err := tx.Query(ctx, `SELECT s FROM pg_catalog.unnest($1::text[]) s
		WHERE NOT CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_namespace n WHERE n.nspname = s)
			THEN pg_catalog.has_schema_privilege(s, 'CREATE')
			ELSE pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE') END
		ORDER BY s`, schemas)
	if err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	denied, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("inspect target database: %w", err)
	}
	if len(denied) > 0 {
		return fmt.Errorf("the target database user may not create objects in schema(s) %s: grant it CREATE on the database (or the schemas), or restore as their owner", strings.Join(denied, ", "))
	}
	return nil
}
