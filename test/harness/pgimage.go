package harness

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// OperatorDatabaseImage is the image name the infrastructure operator runs
// its PostgreSQL from (DATABASE_IMAGE), per major:
//   - 12: the default of DatabaseImage() on release-4.17 and release-4.19
//     (openshift/assisted-service internal/controller/controllers/images.go),
//     which MCE 2.4-2.10 also run (docs/postgresql.md);
//   - 13: release-ocm-2.16 (MCE 2.11), 15: release-ocm-2.17, 16: master.
func OperatorDatabaseImage(major int) string {
	switch major {
	case 12:
		return "quay.io/sclorg/postgresql-12-c8s:latest"
	default:
		return fmt.Sprintf("quay.io/sclorg/postgresql-%d-c9s:latest", major)
	}
}

var (
	pgImageMu sync.Mutex
	pgImages  = map[int]*Image{}
	entryOnce sync.Once
	entryBin  string
	entryErr  error
)

// PostgresImage builds (once per process) the test node's PostgreSQL image
// of a major: the server binaries of that major (npm's @embedded-postgres
// build in the tool cache, or Debian's for 15), the host's C library they
// run on, nss_wrapper, and test/harness/images/sclorg as the entry point,
// which keeps sclorg's contract (see its package comment). USER 26, HOME
// /var/lib/pgsql, the volume at /var/lib/pgsql/data: as sclorg's images.
func PostgresImage(major int) (*Image, error) {
	pgImageMu.Lock()
	defer pgImageMu.Unlock()
	if img, ok := pgImages[major]; ok {
		return img, nil
	}
	bin, err := PGBinDirFor(major)
	if err != nil {
		return nil, err
	}
	entryOnce.Do(func() { entryBin, entryErr = buildTestCommand("harness/images/sclorg", "run-postgresql") })
	if entryErr != nil {
		return nil, entryErr
	}
	root, err := filepath.EvalSymlinks(filepath.Dir(bin))
	if err != nil {
		return nil, err
	}
	// Debian's server stays at its host path (its binaries find their share
	// directory by a compiled-in path); npm's tree is relocatable (bin, lib,
	// share side by side) and goes to /usr/pgsql-NN, as PGDG's packages lay
	// it out.
	var files []ImageFile
	dest := fmt.Sprintf("/usr/pgsql-%d", major)
	trees := map[string]string{root: dest}
	if strings.HasPrefix(root, "/usr/lib/postgresql/") {
		dest = root
		share := "/usr/share/postgresql/" + filepath.Base(root)
		// Debian builds with the system's time zone data.
		trees = map[string]string{root: root, share: share, "/usr/share/zoneinfo": "/usr/share/zoneinfo"}
	}
	// initdb takes the locale from LANG (sclorg: en_US.utf8, made with
	// localedef); here the host's compiled C.utf8.
	trees["/usr/lib/locale/C.utf8"] = "/usr/lib/locale/C.utf8"
	for src, to := range trees {
		fs, err := HostFiles(src, to)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	nssWrapper, err := findNSSWrapper()
	if err != nil {
		return nil, err
	}
	// initdb and pg_ctl run the server through popen and system: /bin/sh.
	shell, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		return nil, err
	}
	libs, err := SharedLibraries([]string{"LD_LIBRARY_PATH=" + filepath.Join(root, "lib")},
		filepath.Join(root, "bin", "postgres"), filepath.Join(root, "bin", "initdb"), filepath.Join(root, "bin", "pg_ctl"), nssWrapper, shell)
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		if !strings.HasPrefix(l.Path, root+"/") { // the server's own are in its tree
			files = append(files, l)
		}
	}
	files = append(files,
		ImageFile{Path: nssWrapper, Mode: 0o755, Source: nssWrapper},
		ImageFile{Path: "/bin/sh", Mode: 0o755, Source: shell},
		ImageFile{Path: "/usr/bin/run-postgresql", Mode: 0o755, Source: entryBin},
		ImageFile{Path: "/usr/bin/pg_isready", Mode: fs.ModeSymlink | 0o777, Target: "run-postgresql"},
		ImageFile{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\npostgres:x:26:26:PostgreSQL Server:/var/lib/pgsql:/bin/sh\n")},
		ImageFile{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\npostgres:x:26:\n")},
		// fix-permissions: the UID the image runs as, or any UID in group 0.
		ImageFile{Path: "/var/lib/pgsql", Mode: fs.ModeDir | 0o775, UID: 26},
		ImageFile{Path: "/var/lib/pgsql/data", Mode: fs.ModeDir | 0o775, UID: 26},
		ImageFile{Path: "/run/postgresql", Mode: fs.ModeDir | 0o775, UID: 26},
		ImageFile{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	)
	dir, err := os.MkdirTemp("", "kat-pgimage-")
	if err != nil {
		return nil, err
	}
	AtExit(func() { _ = os.RemoveAll(dir) })
	img, err := BuildImage(dir, ImageConfig{
		Entrypoint: []string{"/usr/bin/run-postgresql"},
		User:       "26",
		Env: []string{
			"PATH=" + dest + "/bin:/usr/bin:/bin",
			"LD_LIBRARY_PATH=" + dest + "/lib",
			"HOME=/var/lib/pgsql",
			"PGUSER=postgres",
			"LANG=C.UTF-8",
			fmt.Sprintf("POSTGRESQL_VERSION=%d", major),
		},
		Labels: map[string]string{"io.openshift.tags": fmt.Sprintf("database,postgresql,postgresql%d", major)},
	}, files)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL %d image: %w", major, err)
	}
	pgImages[major] = img
	return img, nil
}

// findNSSWrapper is the host's libnss_wrapper.so (Debian's libnss-wrapper).
func findNSSWrapper() (string, error) {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"} {
		p := filepath.Join(dir, "libnss_wrapper.so")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("libnss_wrapper.so not found (Debian package libnss-wrapper; make tools installs it)")
}

// buildTestCommand builds a command of the test module (a static binary)
// into a temporary directory that is removed at exit.
func buildTestCommand(pkg, name string) (string, error) {
	dir, err := os.MkdirTemp("", "kat-cmd-")
	if err != nil {
		return "", err
	}
	AtExit(func() { _ = os.RemoveAll(dir) })
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
	cmd.Dir = filepath.Join(RepoRoot(), "test")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./%s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

var (
	checkerOnce sync.Once
	checkerImg  *Image
	checkerErr  error
)

// CheckerImage is test/harness/images/checker as an image (built once per
// process), running as the restore image's user.
func CheckerImage() (*Image, error) {
	checkerOnce.Do(func() {
		bin, err := buildTestCommand("harness/images/checker", "checker")
		if err != nil {
			checkerErr = err
			return
		}
		dir, err := os.MkdirTemp("", "kat-checker-")
		if err != nil {
			checkerErr = err
			return
		}
		AtExit(func() { _ = os.RemoveAll(dir) })
		checkerImg, checkerErr = BuildImage(dir, ImageConfig{Entrypoint: []string{"/checker"}, User: "1001"},
			[]ImageFile{{Path: "/checker", Mode: 0o755, Source: bin}})
	})
	return checkerImg, checkerErr
}
