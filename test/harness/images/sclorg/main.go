// Command run-postgresql is the entry point of the test node's PostgreSQL
// images: it keeps the contract of sclorg's postgresql-container images
// (quay.io/sclorg/postgresql-NN-c8s/c9s, registry.redhat.io/rhelN/postgresql-NN),
// which the infrastructure operator runs as DATABASE_IMAGE, with a server
// built elsewhere (npm's @embedded-postgres packages, or Debian's). The images
// are built by the harness (test/harness/pgimage.go); nothing is pulled.
//
// The contract, from sclorg/postgresql-container (12/root/usr/bin/run-postgresql
// and 12/root/usr/share/container-scripts/postgresql/common.sh, the same in
// 13, 15, 16):
//
//   - POSTGRESQL_USER, POSTGRESQL_PASSWORD and POSTGRESQL_DATABASE come
//     together or not at all (check_env_vars);
//   - PGDATA is $HOME/data/userdata, created and made 0700 (set_pgdata); the
//     volume is mounted at $HOME/data (/var/lib/pgsql/data);
//   - any UID: a passwd entry for the running UID is made with nss_wrapper
//     (generate_passwd_file);
//   - a new data directory is initialised (initdb, the include of the custom
//     configuration, "host all all all md5" in pg_hba.conf), the user and
//     the database are created (create_users); an existing one of another
//     major is refused ("Incompatible data directory", try_pgupgrade) unless
//     an upgrade is asked for, which these images do not offer;
//   - the password is set on every start (start/set_passwords.sh);
//   - the server first runs without TCP (pg_ctl start -o "-h ”") for that
//     setup, is stopped, and then PostgreSQL replaces the script (exec
//     postgres), listening on '*' (openshift-custom-postgresql.conf.template),
//     so that SIGTERM reaches it.
//
// Invoked as pg_isready it answers like PostgreSQL's pg_isready (the real
// images have it, and probes run it): exit 0 when the server accepts
// connections, 1 when it rejects them (starting up or shutting down), 2 when
// there is no response.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

const socketDir = "/tmp"

func main() {
	if filepath.Base(os.Args[0]) == "pg_isready" {
		os.Exit(isReady(os.Args[1:]))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	home := os.Getenv("HOME")
	if home == "" {
		home = "/var/lib/pgsql"
	}
	pgdata := filepath.Join(home, "data", "userdata")
	if err := os.MkdirAll(pgdata, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(pgdata, 0o700); err != nil {
		return err
	}
	os.Setenv("PGDATA", pgdata)

	user, userOK := os.LookupEnv("POSTGRESQL_USER")
	pass, passOK := os.LookupEnv("POSTGRESQL_PASSWORD")
	db, dbOK := os.LookupEnv("POSTGRESQL_DATABASE")
	if !userOK || !passOK || !dbOK {
		return errors.New("You must either specify the following environment variables:\n  POSTGRESQL_USER\n  POSTGRESQL_PASSWORD\n  POSTGRESQL_DATABASE")
	}
	if len(user) > 63 || len(db) > 63 {
		return errors.New("PostgreSQL username or database name too long (maximum 63 characters)")
	}

	// generate_passwd_file: the running UID becomes "postgres" for initdb
	// and the server, whatever it is.
	passwd := filepath.Join(home, "passwd")
	entry := fmt.Sprintf("postgres:x:%d:%d:PostgreSQL Server:%s:/bin/sh\n", os.Getuid(), os.Getgid(), home)
	if err := os.WriteFile(passwd, []byte(entry), 0o644); err != nil {
		return err
	}
	os.Setenv("LD_PRELOAD", "libnss_wrapper.so")
	os.Setenv("NSS_WRAPPER_PASSWD", passwd)
	os.Setenv("NSS_WRAPPER_GROUP", "/etc/group")

	// generate_postgresql_config
	custom := filepath.Join(home, "openshift-custom-postgresql.conf")
	conf := "listen_addresses = '*'\nmax_connections = 100\nmax_prepared_transactions = 0\nshared_buffers = 32MB\neffective_cache_size = 128MB\n"
	if err := os.WriteFile(custom, []byte(conf), 0o644); err != nil {
		return err
	}

	initialized := false
	if _, err := os.Stat(filepath.Join(pgdata, "postgresql.conf")); errors.Is(err, os.ErrNotExist) {
		if err := command("initdb").Run(); err != nil {
			return fmt.Errorf("initdb: %w", err)
		}
		if err := appendFile(filepath.Join(pgdata, "postgresql.conf"), "\n# Custom OpenShift configuration:\ninclude '"+custom+"'\n"); err != nil {
			return err
		}
		if err := appendFile(filepath.Join(pgdata, "pg_hba.conf"), "\n# Allow connections from all hosts.\nhost all all all md5\n\n# Allow replication connections from all hosts.\nhost replication all all md5\n"); err != nil {
			return err
		}
		initialized = true
	} else if err := tryUpgrade(pgdata); err != nil {
		return err
	}

	if err := command("pg_ctl", "start", "-w", "--timeout", "86400", "-o", "-h '' -k "+socketDir).Run(); err != nil {
		return fmt.Errorf("pg_ctl start: %w", err)
	}
	if err := setup(initialized, user, pass, db); err != nil {
		_ = command("pg_ctl", "stop").Run()
		return err
	}
	if err := command("pg_ctl", "stop").Run(); err != nil {
		return fmt.Errorf("pg_ctl stop: %w", err)
	}

	// unset_env_vars, then exec postgres.
	for _, v := range []string{"POSTGRESQL_DATABASE", "POSTGRESQL_USER", "POSTGRESQL_PASSWORD", "POSTGRESQL_ADMIN_PASSWORD"} {
		os.Unsetenv(v)
	}
	fmt.Println("Starting server...")
	postgres, err := exec.LookPath("postgres")
	if err != nil {
		return err
	}
	return syscall.Exec(postgres, []string{"postgres", "-k", socketDir}, os.Environ())
}

// tryUpgrade refuses a data directory of another major, as try_pgupgrade
// does when no POSTGRESQL_UPGRADE is set.
func tryUpgrade(pgdata string) error {
	b, err := os.ReadFile(filepath.Join(pgdata, "PG_VERSION"))
	if err != nil {
		return err
	}
	have, want := strings.TrimSpace(string(b)), os.Getenv("POSTGRESQL_VERSION")
	if have == want {
		return nil
	}
	return fmt.Errorf("Incompatible data directory.  This container image provides\nPostgreSQL '%s', but data directory is of\nversion '%s'.", want, have)
}

// setup creates the user and the database on a new data directory
// (create_users) and sets the password on every start (set_passwords.sh).
func setup(initialized bool, user, pass, db string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s user=postgres dbname=postgres sslmode=disable", socketDir))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if initialized {
		if _, err := conn.Exec(ctx, "CREATE USER "+pgx.Identifier{user}.Sanitize()); err != nil {
			return fmt.Errorf("createuser: %w", err)
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()+" OWNER "+pgx.Identifier{user}.Sanitize()); err != nil {
			return fmt.Errorf("createdb: %w", err)
		}
	}
	// The password as a literal: ALTER USER takes no parameters.
	lit := "'" + strings.ReplaceAll(pass, "'", "''") + "'"
	if _, err := conn.Exec(ctx, "ALTER USER "+pgx.Identifier{user}.Sanitize()+" WITH ENCRYPTED PASSWORD "+lit); err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	return nil
}

func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd
}

func appendFile(name, text string) error {
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isReady sends a startup packet and reads the first answer: an
// authentication request or any error but "cannot connect now" means the
// server accepts connections.
func isReady(args []string) int {
	fs := flag.NewFlagSet("pg_isready", flag.ContinueOnError)
	host := fs.String("h", socketDir, "host")
	port := fs.Int("p", 5432, "port")
	_ = fs.Bool("q", false, "quiet")
	if err := fs.Parse(args); err != nil {
		return 3
	}
	network, addr := "tcp", net.JoinHostPort(*host, strconv.Itoa(*port))
	if strings.HasPrefix(*host, "/") {
		network, addr = "unix", filepath.Join(*host, ".s.PGSQL."+strconv.Itoa(*port))
	}
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		return 2
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	fe := pgproto3.NewFrontend(c, c)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "postgres", "database": "postgres"}})
	if err := fe.Flush(); err != nil {
		return 2
	}
	msg, err := fe.Receive()
	if err != nil {
		return 2
	}
	if e, ok := msg.(*pgproto3.ErrorResponse); ok && e.Code == "57P03" {
		return 1
	}
	return 0
}
