package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// minimalBundle is a signed, encrypted bundle of a one-table database and
// a data dir, in an in-process registry; it returns the ref and identity.
func minimalBundle(t *testing.T) (ref, identity string) {
	t.Helper()
	reg := harness.StartInProcessRegistry(t)
	identity, recipient := ageKey(t)
	src := harness.NewDatabase(t)
	src.Exec(t, `CREATE TABLE notes (id int PRIMARY KEY, body text NOT NULL);
		INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 200) g;`)
	ref = reg.Ref("assisted/db", "v1")
	makeBundle(t, ref, oci.RegistryOptions{PlainHTTP: true}, recipient, bundle.CreateOptions{
		Database: pgDumpSource{src.URL}, Files: &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}})
	return ref, identity
}

// TestRestoreCLI_DatabaseMajor: restore --database-major names the major
// that will run the restored data (the restore Job passes its operator's);
// a target server of another major is refused with exit 27 before anything
// is written.
func TestRestoreCLI_DatabaseMajor(t *testing.T) {
	t.Parallel()
	p := harness.NewPlugin(t)
	ref, identity := minimalBundle(t)
	target := emptyDatabase(t) // the machine's PostgreSQL 15
	dataDir := filepath.Join(t.TempDir(), "data")
	args := []string{"restore", ref, "--plain-http", "--signer", signerFile(t), "--identity", identity,
		"--db", target.URL, "--data-dir", dataDir, "--no-cluster"}
	r := p.Run(t, append(args, "--database-major", "12")...)
	if r.ExitCode != 27 || !strings.Contains(r.Stderr, "PostgreSQL 12 will run the restored data") || !strings.Contains(r.Stderr, "nothing was changed") {
		t.Fatalf("restore into PostgreSQL 15 with --database-major 12: exit %d, want 27:\n%s", r.ExitCode, r.Combined())
	}
	if n := userTables(t, target.URL); n != 0 {
		t.Fatalf("the refused restore wrote %d table(s)", n)
	}
	if r := p.Run(t, append(args, "--database-major", "15")...); r.ExitCode != 0 {
		t.Fatalf("restore into PostgreSQL 15 with --database-major 15: exit %d\n%s", r.ExitCode, r.Combined())
	}
}

// TestRestoreCLI_DatabaseWait: a target server that is not up yet fails the
// restore at once, unless --database-wait, which waits for it (the restore
// Job's sidecar may restart or recover after its probe passed).
func TestRestoreCLI_DatabaseWait(t *testing.T) {
	t.Parallel()
	p := harness.NewPlugin(t)
	ref, identity := minimalBundle(t)
	srv := harness.StartPostgres(t)
	target := srv.NewDatabase(t)
	srv.Stop()
	args := []string{"restore", ref, "--plain-http", "--signer", signerFile(t), "--identity", identity,
		"--db", target.URL, "--data-dir", filepath.Join(t.TempDir(), "data"), "--no-cluster"}
	start := time.Now()
	if r := p.Run(t, args...); r.ExitCode == 0 || time.Since(start) > 30*time.Second {
		t.Fatalf("restore into a server that is down, no --database-wait: exit %d after %s\n%s", r.ExitCode, time.Since(start), r.Combined())
	}

	cmd := p.Command(context.Background(), append(args, "--database-wait", "2m")...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	srv.Restart(t)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("restore with --database-wait, the server up 3 s later: %v\n%s", err, out.String())
	}
	if got, want := tableSums(t, target.URL)["notes"], "200 rows"; !strings.HasPrefix(got, want) {
		t.Fatalf("notes on the target: %q", got)
	}
}
