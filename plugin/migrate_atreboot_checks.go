package plugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	orasregistry "oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/registry"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
)

// pinAuthFile is the auth file that holds the registry's credential now,
// absolute; "" when none does (an anonymous registry).
func (o *MigrateOptions) pinAuthFile(ctx context.Context) (string, string) {
	host := o.opts.Ref.Registry
	if !o.opts.Ref.Remote() {
		return "", ""
	}
	for _, p := range registry.AuthFiles(o.Registry.ConfigFile) {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		cred, err := registry.Credential(ctx, p, host)
		if err == nil && cred != auth.EmptyCredential {
			a, _ := filepath.Abs(p)
			return a, "registry credentials for " + host + ": " + a
		}
	}
	if o.Registry.ConfigFile != "" {
		a, _ := filepath.Abs(o.Registry.ConfigFile)
		return a, "no credential for " + host + " in " + a + ": the push will be anonymous"
	}
	return "", "no registry credentials for " + host + " in " + strings.Join(registry.AuthFiles(""), ", ") + ": the push will be anonymous"
}

// repoReference is --to's registry and repository, for a ping.
func (o *MigrateOptions) repoReference() orasregistry.Reference {
	return orasregistry.Reference{Registry: o.opts.Ref.Registry, Repository: o.opts.Ref.Repository}
}

// armChecks checks now what the migration will need at the reboot. A
// failure that will not go away by the reboot is an error; what may (cluster
// 0 not up yet) is a note.
func (o *MigrateOptions) armChecks(ctx context.Context, s *atreboot.Spec) ([]string, error) {
	var notes []string
	// Each check has its own few seconds: one that hangs does not eat the
	// others' time.
	check := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 10*time.Second) }
	// Cluster 0.
	cctx, cancel := check()
	defer cancel()
	if c, err := migrate.NewCluster(o.opts.Config); err != nil {
		return nil, clierr.New(fmt.Errorf("cluster 0: %w", err), "", clierr.ExitUsage)
	} else if err := c.Reachable(cctx); err != nil {
		notes = append(notes, fmt.Sprintf("cluster 0 (%s) does not answer yet (%v): the migration tries again at the reboot", o.opts.Target, err))
	} else {
		notes = append(notes, fmt.Sprintf("cluster 0 answers (%s)", o.opts.Target))
	}
	// The registry: reachable, and the credentials accepted.
	cctx, cancel = check()
	defer cancel()
	if o.opts.Ref.Remote() {
		rc, err := registry.New(o.opts.Registry.Registry())
		if err != nil {
			return nil, clierr.New(err, "Check --registry-config and --ca-file.", clierr.ExitUsage)
		}
		reg := &remote.Registry{RepositoryOptions: remote.RepositoryOptions{Client: rc, Reference: o.repoReference(), PlainHTTP: o.opts.Registry.PlainHTTP}}
		if err := reg.Ping(cctx); err != nil {
			return nil, clierr.New(fmt.Errorf("registry %s: %w", o.opts.Ref.Registry, registry.Redact(err)),
				"The bundle must reach the registry at the reboot: check --to, the credentials (--registry-config) and --plain-http/--ca-file, then arm again.", clierr.ExitError)
		}
		notes = append(notes, fmt.Sprintf("registry %s answers and accepts the credentials", o.opts.Ref.Registry))
	}
	// Node 0's database answers (assisted-service may still use it now).
	cctx, cancel = check()
	defer cancel()
	if o.opts.SourceDB != "" {
		conn, err := pgx.Connect(cctx, o.opts.SourceDB)
		if err != nil {
			return nil, clierr.New(fmt.Errorf("node 0's database: %s", redactDSN(err.Error(), o.opts.SourceDB)),
				"Check --db or --db-env-file: the migration dumps this database at the reboot.", clierr.ExitError)
		}
		_ = conn.Close(cctx)
		notes = append(notes, "node 0's database answers")
	}
	// Keys.
	if o.Identity != "" {
		if _, err := os.ReadFile(o.Identity); err != nil {
			return nil, clierr.New(fmt.Errorf("--identity: %w", err), "", clierr.ExitUsage)
		}
	}
	if err := atreboot.Writable(s.StateDir); err != nil {
		return nil, clierr.New(fmt.Errorf("--state-dir %s is not writable: %w", s.StateDir, err), "", clierr.ExitUsage)
	}
	// Disk: the copy of the files and the spool each take about their size.
	cctx, cancel = check()
	defer cancel()
	if s.DataDir != "" {
		_, size, err := files.Fingerprint(cctx, s.DataDir, append(append([]string{}, files.DefaultExcludes...), s.Exclude...))
		if err != nil {
			return nil, clierr.New(fmt.Errorf("--data-dir: %w", err), "", clierr.ExitUsage)
		}
		need := int64(64 << 20)
		where := s.StateDir
		if s.CaptureDir != "" {
			need += size
			where = s.CaptureDir
		}
		if o.opts.SpoolDir != "" {
			need += size
		}
		free, err := atreboot.FreeSpace(where)
		if err == nil && free < need {
			return nil, clierr.New(fmt.Errorf("%s has %s free; the copy of --data-dir (%s) and the spool need %s", where, files.HumanBytes(free), files.HumanBytes(size), files.HumanBytes(need)),
				"Give --spool-dir on a disk with room (on a live ISO the home directory is in memory), or --no-spool.", clierr.ExitError)
		}
		if err == nil {
			notes = append(notes, fmt.Sprintf("%s in %s; %s free in %s", files.HumanBytes(size), s.DataDir, files.HumanBytes(free), where))
		}
	}
	return notes, nil
}
