package harness

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGBinDir is where PostgreSQL's server binaries live (Debian layout).
// KUBECTL_ASSISTED_PGBIN overrides it.
func PGBinDir() string {
	if d := os.Getenv("KUBECTL_ASSISTED_PGBIN"); d != "" {
		return d
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best := ""
	for _, m := range matches {
		if best == "" || pgMajorOf(m) > pgMajorOf(best) {
			best = m
		}
	}
	return best
}

func pgMajorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// sharedServerURL is the machine's PostgreSQL that fresh databases are made on.
func sharedServerURL() string {
	if u := os.Getenv("KUBECTL_ASSISTED_TEST_PG"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Database is an empty database of its own for one test.
type Database struct {
	Name string
	// URL connects as a superuser, e.g. postgres://postgres@127.0.0.1:5432/kat_xxx?sslmode=disable.
	URL string
}

// Connect opens a connection to the database; closed when t ends.
func (d *Database) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatalf("connect %s: %v", d.Name, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// Exec runs SQL (several statements are fine) against the database.
func (d *Database) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	c := d.Connect(t)
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("exec on %s: %v\n%s", d.Name, err, sql)
	}
}

// NewDatabase creates a fresh database on the machine's PostgreSQL server and
// drops it when t ends.
func NewDatabase(t testing.TB) *Database {
	t.Helper()
	return newDatabaseOn(t, sharedServerURL())
}

func newDatabaseOn(t testing.TB, serverURL string) *Database {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		Unavailable(t, "PostgreSQL", err)
	}
	defer admin.Close(context.Background())
	name := "kat_" + randHex(6)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, serverURL); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = c.Close(ctx)
		}
	})
	u, _ := url.Parse(serverURL)
	u.Path = "/" + name
	return &Database{Name: name, URL: u.String()}
}

// Server is a private PostgreSQL server (its own initdb), for tests that need
// two independent sites, restarts or a server that dies mid-work.
type Server struct {
	Port    int
	DataDir string
	SockDir string
	BinDir  string
	proc    *Process
	runAs   []string
}

// StartPostgres initdbs and starts a private server on a free loopback port with
// trust authentication. It runs as the postgres user when the tests run as root,
// because PostgreSQL refuses to run as root. Stopped when t ends.
func StartPostgres(t testing.TB) *Server {
	t.Helper()
	bin := PGBinDir()
	if bin == "" {
		Unavailable(t, "PostgreSQL server binaries", fmt.Errorf("no /usr/lib/postgresql/*/bin"))
	}
	s := &Server{BinDir: bin, Port: FreePort(t)}
	base := SharedTempDir(t, "pg")
	s.DataDir = filepath.Join(base, "data")
	s.SockDir = filepath.Join(base, "sock")
	for _, d := range []string{s.DataDir, s.SockDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if isRoot() {
		u, err := user.Lookup("postgres")
		if err != nil {
			Unavailable(t, "postgres system user", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{base, s.DataDir, s.SockDir} {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		s.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	initdb := s.command(filepath.Join(bin, "initdb"), "-D", s.DataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.start(t)
	t.Cleanup(func() { s.Stop() })
	return s
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	argv := append(append([]string{}, s.runAs...), name)
	argv = append(argv, args...)
	return exec.Command(argv[0], argv[1:]...)
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	cmd := s.command(filepath.Join(s.BinDir, "postgres"), "-D", s.DataDir,
		"-p", strconv.Itoa(s.Port), "-k", s.SockDir, "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "full_page_writes=off",
		// fsync=off survives a killed server (the OS keeps the pages); synchronous_commit
		// stays on so a commit that returned is in the WAL when a test kills the server.
		"-c", "max_connections=50", "-c", "shared_buffers=64MB")
	p, err := StartProcess("postgres", cmd)
	if err != nil {
		t.Fatal(err)
	}
	s.proc = p
	err = waitFor(p, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, s.URL("postgres"))
		if err != nil {
			return err
		}
		return c.Close(ctx)
	})
	if err != nil {
		t.Fatalf("private postgres: %v", err)
	}
}

// URL is the connection URL of database db on this server, as superuser postgres.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// NewDatabase creates a fresh database on this server.
func (s *Server) NewDatabase(t testing.TB) *Database {
	t.Helper()
	return newDatabaseOn(t, s.URL("postgres"))
}

// Stop shuts the server down (fast mode).
func (s *Server) Stop() {
	if s.proc != nil {
		s.proc.Stop(20 * time.Second)
	}
}

// Kill kills the server and every backend without a shutdown, as a crash or an
// OOM kill of the whole container would, and waits until they are gone.
func (s *Server) Kill() {
	if pid := s.postmasterPID(); pid > 0 {
		killTree(pid)
	}
	if s.proc != nil {
		s.proc.Kill()
	}
}

func (s *Server) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(s.DataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}

// Restart stops (or finds killed) and starts the server again on the same port
// and data directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	s.start(t)
}

// Version is the server's major version, e.g. 15.
func (s *Server) Version() int { return pgMajorOf(s.BinDir) }

// LoadSQLFile runs a plain SQL file (such as a pg_dump) with psql against url.
// It drops psql 15.14+ `\restrict` lines so older clients can load it too.
func LoadSQLFile(t testing.TB, url, path string) {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		Unavailable(t, "psql", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, `\restrict`) || strings.HasPrefix(line, `\unrestrict`) {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	cmd := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url)
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql %s: %v\n%s", filepath.Base(path), err, out)
	}
}

// AssistedSchemaPath is the assisted-service schema the tests load: the real
// one (a pg_dump of the service's database in ../shared/fixtures) when present,
// else the project's own DDL of the same tables (OwnAssistedSchemaPath).
func AssistedSchemaPath() string {
	if p := RealAssistedSchemaPath(); p != "" {
		return p
	}
	return OwnAssistedSchemaPath()
}

// RealAssistedSchemaPath is ../shared/fixtures/assisted-schema.sql, or "" when
// it is absent.
func RealAssistedSchemaPath() string {
	p := filepath.Join(SharedDir(), "fixtures", "assisted-schema.sql")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// OwnAssistedSchemaPath is the project's own DDL of the assisted-service
// tables it moves (test/harness/schema/assisted.sql).
func OwnAssistedSchemaPath() string {
	return filepath.Join(RepoRoot(), "test", "harness", "schema", "assisted.sql")
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
