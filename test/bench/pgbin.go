package main

import (
	"fmt"
	"os"
	"path/filepath"

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// binaryRun is the built binary's own dump and restore of one data set: the
// path a migration runs (bundle create's database layer through zstd, age and
// an OCI layout; restore pulling it back through the layer reader into an
// empty database), where the engine rows measure bundle/pg alone. Its peak
// memory is the one the issue bounds (< 100 MiB, whatever the row width).
type binaryRun struct {
	create, restore measured
	layerBytes      int64
}

// benchPGBinary runs `bundle create` (database layer only, encrypted, into
// an OCI layout) and `restore --no-cluster --skip-files` into a new database
// of srv, and checks that the restored rows are the source's. It is skipped
// (nil, nil) when make bench did not name the binary.
func benchPGBinary(b *bench, srv *harness.Server, src *harness.Database, dir string) (*binaryRun, error) {
	bin := os.Getenv("KUBECTL_ASSISTED_BIN")
	if bin == "" {
		return nil, nil
	}
	key := filepath.Join(dir, "bin-key.txt")
	recipient, err := newAgeKey(key)
	if err != nil {
		return nil, err
	}
	layout := filepath.Join(dir, "bin-layout")
	defer func() { _ = os.RemoveAll(layout); _ = os.Remove(key) }()
	ref := "oci:" + layout + ":v1"
	var r binaryRun
	if r.create, err = runSynced(bin, "bundle", "create", "--to", ref, "--db", src.URL, "--data-dir", "",
		"--recipient", recipient, "--no-progress", "-o", "json"); err != nil {
		return nil, err
	}
	r.layerBytes = layerBytes(r.create.stdout)
	target := srv.NewDatabase(b)
	defer src.Exec(b, "DROP DATABASE "+target.Name+" WITH (FORCE)")
	if r.restore, err = runSynced(bin, "restore", ref, "--allow-unsigned", "--identity", key, "--db", target.URL,
		"--no-cluster", "--skip-files", "--no-progress", "-o", "json"); err != nil {
		return nil, err
	}
	if err := sameCounts(b, src, target); err != nil {
		return nil, err
	}
	return &r, nil
}

// report prints the binary's rows: time beside the engine's (context, no
// goal) and peak memory against the bound.
func (r *binaryRun) report(b *bench, engineDump, engineRestore *series) {
	if r == nil {
		fmt.Println("binary rows skipped: KUBECTL_ASSISTED_BIN is not set (make bench sets it)")
		return
	}
	fmt.Printf("through the binary (bundle create --db, encrypted, to an OCI layout; restore --no-cluster --skip-files), one run:\n")
	for _, s := range []struct {
		what   string
		m      measured
		engine *series
	}{{"binary dump", r.create, engineDump}, {"binary restore", r.restore, engineRestore}} {
		fmt.Printf("%-24s %-10s %-40s %-6s < 100 MiB %s\n", "peak RSS "+s.what, mib(s.m.maxRSS), secs(s.m.wall)+" wall (engine "+secs(s.engine.median())+")", "",
			b.goal("peak RSS "+s.what+" "+mib(s.m.maxRSS), s.m.maxRSS < maxRSSGoal))
	}
	fmt.Printf("%-24s %s (encrypted database layer)\n", "", mib(r.layerBytes))
}

// newAgeKey writes a new age identity to path (0600) and returns its
// recipient.
func newAgeKey(path string) (string, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(id.String()+"\n"), 0o600); err != nil {
		return "", err
	}
	return id.Recipient().String(), nil
}
