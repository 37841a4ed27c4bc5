package harness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// Exec runs SQL (several statements are fine) against the database, on a
// connection of its own that it closes (a session left open would look like
// a service still writing to node 0's database).
func (d *Database) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatalf("connect %s: %v", d.Name, err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("exec on %s: %v\n%s", d.Name, err, sql)
	}
}

// NewDatabase creates a fresh database on the machine's PostgreSQL server and
// drops it when t ends.
func NewDatabase(t testing.TB) *Database {
	t.Helper()
	return newDatabaseOn(t, sharedServerURL())
}

// NewDatabaseEncoded is NewDatabase with another server encoding (and the C
// locale, which suits any).
func NewDatabaseEncoded(t testing.TB, encoding string) *Database {
	t.Helper()
	return newDatabaseWith(t, sharedServerURL(), "ENCODING '"+encoding+"' LC_COLLATE 'C' LC_CTYPE 'C'")
}

func newDatabaseOn(t testing.TB, serverURL string) *Database {
	t.Helper()
	return newDatabaseWith(t, serverURL, "ENCODING 'UTF8'")
}

func newDatabaseWith(t testing.TB, serverURL, options string) *Database {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		Unavailable(t, "PostgreSQL", err)
	}
	defer admin.Close(context.Background())
	name := "kat_" + randHex(6)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 "+options); err != nil {
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
	major   int
	proc    *Process
	runAs   []string
}

// StartPostgres initdbs and starts a private server on a free loopback port with
// trust authentication, of the newest major in /usr/lib/postgresql (or
// KUBECTL_ASSISTED_PGBIN). It runs as the postgres user when the tests run as
// root, because PostgreSQL refuses to run as root. Stopped when t ends.
func StartPostgres(t testing.TB) *Server {
	t.Helper()
	bin := PGBinDir()
	if bin == "" {
		Unavailable(t, "PostgreSQL server binaries", fmt.Errorf("no /usr/lib/postgresql/*/bin"))
	}
	return StartPostgresIn(t, bin)
}

// PGBinDirFor finds the server binaries of PostgreSQL major: the directory
// KUBECTL_ASSISTED_PGBIN_<major> names, the tool cache's postgresql/<major>/bin
// (test/tools/install.sh postgres), or Debian's /usr/lib/postgresql/<major>/bin.
func PGBinDirFor(major int) (string, error) {
	candidates := []string{
		os.Getenv(fmt.Sprintf("KUBECTL_ASSISTED_PGBIN_%d", major)),
		filepath.Join(CacheDir(), "postgresql", strconv.Itoa(major), "bin"),
		filepath.Join("/usr/lib/postgresql", strconv.Itoa(major), "bin"),
	}
	for _, d := range candidates {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, "postgres")); err == nil && !fi.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL %d server binaries in %s (test/tools/install.sh postgres installs them)", major, strings.Join(candidates[1:], " or "))
}

// StartPostgresMajor starts a private server of PostgreSQL major (see
// PGBinDirFor), or skips t (fails it in CI) when its binaries are missing.
func StartPostgresMajor(t testing.TB, major int) *Server {
	t.Helper()
	bin, err := PGBinDirFor(major)
	if err != nil {
		Unavailable(t, fmt.Sprintf("PostgreSQL %d", major), err)
	}
	s := StartPostgresIn(t, bin)
	if s.Version() != major {
		t.Fatalf("%s is PostgreSQL %d, not %d", bin, s.Version(), major)
	}
	return s
}

// StartPostgresIn initdbs and starts a private server from the server binaries
// in binDir (initdb and postgres; a Debian layout or an install tree with
// ../lib and ../share beside bin).
func StartPostgresIn(t testing.TB, binDir string) *Server {
	t.Helper()
	major, err := serverMajor(binDir)
	if err != nil {
		Unavailable(t, "PostgreSQL server in "+binDir, err)
	}
	s := &Server{BinDir: binDir, Port: FreePort(t), major: major}
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
		if s.BinDir, err = reachableBinDir(binDir); err != nil {
			t.Fatalf("PostgreSQL binaries in %s: %v", binDir, err)
		}
	}
	initdb := s.command(filepath.Join(s.BinDir, "initdb"), "-D", s.DataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.start(t)
	t.Cleanup(func() { s.Stop() })
	return s
}

// serverMajor runs `postgres --version` ("postgres (PostgreSQL) 13.23") and
// returns the major version.
func serverMajor(binDir string) (int, error) {
	out, err := exec.Command(filepath.Join(binDir, "postgres"), "--version").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("postgres --version: %v: %s", err, bytes.TrimSpace(out))
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return 0, fmt.Errorf("postgres --version printed nothing")
	}
	v := fields[len(fields)-1]
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("postgres --version: %q", bytes.TrimSpace(out))
	}
	return major, nil
}

var (
	reachableMu   sync.Mutex
	reachableDirs = map[string]string{}
)

// reachableBinDir returns binDir when the postgres user can run the binaries
// there, or else a mirror of binDir's install tree (hard links, copies across
// file systems) under the temporary directory: the tool cache sits in root's
// home, which postgres cannot enter. The mirror is kept for later runs.
func reachableBinDir(binDir string) (string, error) {
	if exec.Command("runuser", "-u", "postgres", "--", "test", "-x", filepath.Join(binDir, "postgres")).Run() == nil {
		return binDir, nil
	}
	reachableMu.Lock()
	defer reachableMu.Unlock()
	if d, ok := reachableDirs[binDir]; ok {
		return d, nil
	}
	real, err := filepath.EvalSymlinks(filepath.Dir(binDir))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(real))
	mirror := filepath.Join(os.TempDir(), "kat-pgbin-"+filepath.Base(real)+"-"+hex.EncodeToString(sum[:4]))
	if _, err := os.Stat(filepath.Join(mirror, ".complete")); err != nil {
		tmp, err := os.MkdirTemp(os.TempDir(), "kat-pgbin-tmp-")
		if err != nil {
			return "", err
		}
		if err := mirrorTree(real, tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
			_ = os.RemoveAll(tmp)
			return "", err
		}
		_ = os.Chmod(tmp, 0o755)
		if err := os.Rename(tmp, mirror); err != nil {
			// Another test process made it first.
			_ = os.RemoveAll(tmp)
			if _, serr := os.Stat(filepath.Join(mirror, ".complete")); serr != nil {
				return "", err
			}
		}
	}
	d := filepath.Join(mirror, filepath.Base(binDir))
	reachableDirs[binDir] = d
	return d, nil
}

// mirrorTree recreates the tree at src under dst: directories, symlinks as they
// are, regular files hard-linked (copied when linking fails).
func mirrorTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if rel == "." {
				return nil
			}
			return os.Mkdir(target, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			if os.Link(path, target) == nil {
				return nil
			}
			return copyFile(path, target, info.Mode().Perm()|0o444)
		}
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
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
		"-c", "max_connections=50", "-c", "shared_buffers=64MB",
		// Debian's build has LLVM JIT, which compiles the catalog queries of
		// small test databases for seconds on a busy machine; the npm builds have none.
		"-c", "jit=off")
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
func (s *Server) Version() int { return s.major }

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
