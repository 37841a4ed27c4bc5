package plugin

import (
	"errors"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
)

// errNoDatabaseEngine is returned until the PostgreSQL engine (bundle/pg) is
// wired in here.
var errNoDatabaseEngine = errors.New("this build has no database engine yet: leave out --db/--db-env-file to bundle the files and resources only")

// databaseSource turns --db/--db-env-file into the database layer's source,
// or nil when neither is given. The PostgreSQL engine plugs in here with an
// adapter: a type whose Dump calls pg.Dump(ctx, connString, w, opts) and maps
// pg.Summary to bundle.DatabaseSummary. Errors must never quote the DSN.
func databaseSource(p option.Postgres) (bundle.DatabaseSource, error) {
	if p.URL == "" && p.EnvFile == "" {
		return nil, nil
	}
	return nil, errNoDatabaseEngine
}
