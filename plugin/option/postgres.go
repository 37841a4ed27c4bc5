package option

import (
	"github.com/spf13/pflag"
)

// Postgres is where a command finds a PostgreSQL database: a URL/DSN, or
// assisted-service's own env file (DB_HOST, DB_PORT, DB_USER, DB_PASS, DB_NAME),
// so that on node 0 it just works.
type Postgres struct {
	URL     string
	EnvFile string
}

// AddFlags adds --db and --db-env-file; what names the database for the command
// ("source" or "target") goes into the help text.
func (p *Postgres) AddFlags(fs *pflag.FlagSet, what string) {
	fs.StringVar(&p.URL, "db", "", "The "+what+" database: a PostgreSQL URL or key=value DSN (the password is never printed)")
	fs.StringVar(&p.EnvFile, "db-env-file", "", "Read the "+what+" database from an assisted-service env file (DB_HOST, DB_PORT, DB_USER, DB_PASS, DB_NAME)")
}
