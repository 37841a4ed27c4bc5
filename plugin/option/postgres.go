package option

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

// Postgres is where a command finds a PostgreSQL database: a URL/DSN, or
// assisted-service's own env file (DB_HOST, DB_PORT, DB_USER, DB_PASS, DB_NAME),
// so that on node 0 it just works.
type Postgres struct {
	URL     string
	EnvFile string
	// FromEnv reads the same variables from the process environment, as the
	// in-cluster restore Job sets them from the operator's postgres Secret
	// (see AddFromEnvFlag).
	FromEnv bool
}

// AddFlags adds --db and --db-env-file; what names the database for the command
// ("source" or "target") goes into the help text.
func (p *Postgres) AddFlags(fs *pflag.FlagSet, what string) {
	fs.StringVar(&p.URL, "db", "", "The "+what+" database: a PostgreSQL URL or key=value DSN (the password is never printed)")
	fs.StringVar(&p.EnvFile, "db-env-file", "", "Read the "+what+" database from an assisted-service env file (DB_HOST, DB_PORT, DB_USER, DB_PASS, DB_NAME)")
}

// AddFromEnvFlag adds --db-from-env, for commands that run inside a pod.
func (p *Postgres) AddFromEnvFlag(fs *pflag.FlagSet, what string) {
	fs.BoolVar(&p.FromEnv, "db-from-env", false, "Read the "+what+" database from the environment variables DB_HOST, DB_PORT, DB_USER, DB_PASS and DB_NAME")
}

// ErrNoDatabase means neither --db nor --db-env-file was given.
var ErrNoDatabase = errors.New("no database given: pass --db URL or --db-env-file FILE")

// IsSet reports whether a database was given.
func (p *Postgres) IsSet() bool { return p.URL != "" || p.EnvFile != "" || p.FromEnv }

// Validate rejects more than one way to name the database.
func (p *Postgres) Validate() error {
	if p.URL != "" && p.EnvFile != "" {
		return errors.New("--db and --db-env-file name the same database: give only one")
	}
	if p.FromEnv && (p.URL != "" || p.EnvFile != "") {
		return errors.New("--db-from-env and --db/--db-env-file name the same database: give only one")
	}
	return nil
}

// ConnString resolves the flags into a connection string for pgx: --db as
// given, or a key=value DSN built from the env file (sslmode=disable, as
// assisted-service itself connects). Errors never include the password.
func (p *Postgres) ConnString() (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	switch {
	case p.URL != "":
		return p.URL, nil
	case p.EnvFile != "":
		return connStringFromEnvFile(p.EnvFile)
	case p.FromEnv:
		env := map[string]string{}
		for _, k := range []string{"DB_HOST", "DB_PORT", "DB_USER", "DB_PASS", "DB_NAME"} {
			if v, ok := os.LookupEnv(k); ok {
				env[k] = v
			}
		}
		return connStringFromMap(env, "the environment")
	default:
		return "", ErrNoDatabase
	}
}

// Describe names the database for messages, without its password.
func (p *Postgres) Describe() string {
	if p.FromEnv {
		return "the database of the DB_* environment variables"
	}
	if p.EnvFile != "" {
		return "the database of " + p.EnvFile
	}
	return Redact(p.URL)
}

func connStringFromEnvFile(path string) (string, error) {
	env, err := ReadEnvFile(path)
	if err != nil {
		return "", err
	}
	return connStringFromMap(env, "database env file "+path)
}

// ReadEnvFile reads an env file of KEY=VALUE lines (blank lines, # comments
// and an "export " prefix allowed; a value may be quoted), as assisted-service's
// env files are. Errors name the file and the line number, never a value.
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read database env file: %w", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			// The line may hold a secret: name only its number.
			return nil, fmt.Errorf("database env file %s: line %d is not KEY=VALUE", path, n)
		}
		env[strings.TrimSpace(key)] = unquote(value)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read database env file %s: %w", path, err)
	}
	return env, nil
}

// connStringFromMap builds a key=value DSN from assisted-service's variables;
// source names where they came from in errors.
func connStringFromMap(env map[string]string, source string) (string, error) {
	var missing []string
	for _, k := range []string{"DB_HOST", "DB_USER", "DB_NAME"} {
		if env[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%s lacks %s", source, strings.Join(missing, ", "))
	}
	port := env["DB_PORT"]
	if port == "" {
		port = "5432"
	}
	parts := []string{
		"host=" + dsnQuote(env["DB_HOST"]),
		"port=" + dsnQuote(port),
		"user=" + dsnQuote(env["DB_USER"]),
		"dbname=" + dsnQuote(env["DB_NAME"]),
		"sslmode=disable",
	}
	if pw, ok := env["DB_PASS"]; ok {
		parts = append(parts, "password="+dsnQuote(pw))
	}
	return strings.Join(parts, " "), nil
}

// unquote strips one pair of matching surrounding quotes, as systemd and
// shells read env files.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// dsnQuote quotes a key=value DSN value (libpq syntax).
func dsnQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

const redacted = "xxxxx"

var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)`)

// Redact returns a connection string (URL or key=value DSN) with its password
// replaced by "xxxxx", for messages and logs. A URL it cannot parse loses
// everything between the scheme and the host.
func Redact(connString string) string {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			scheme, rest, _ := strings.Cut(connString, "://")
			if at := strings.LastIndex(rest, "@"); at >= 0 {
				rest = redacted + rest[at:]
			}
			return scheme + "://" + dsnPassword.ReplaceAllString(rest, "${1}"+redacted)
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", redacted)
			u.RawQuery = q.Encode()
		}
		return strings.Replace(u.String(), url.QueryEscape(redacted), redacted, 1)
	}
	return dsnPassword.ReplaceAllString(connString, "${1}"+redacted)
}
