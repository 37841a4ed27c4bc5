package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"
	orasregistry "oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/registry"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
)

// atRebootFlags are migrate's flags that arm node 0 instead of migrating now.
type atRebootFlags struct {
	AtReboot        string
	AtRebootTimeout time.Duration
	Disarm          bool
}

// defaultAtRebootTimeout leaves room, under reboot.target's 30 minutes, for
// the installer's units to stop (see atreboot.ComputeBudget).
const defaultAtRebootTimeout = 10 * time.Minute

// captureTimeout bounds the copy of node 0's files at the reboot.
const captureTimeout = 5 * time.Minute

func (f *atRebootFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.AtReboot, "at-reboot", "", "Do not migrate now: arm node 0 so that the migration runs when node 0 reboots, and the reboot waits for cluster 0's receipt (auto); manual only holds the reboot until the receipt of the bundle you migrate by hand")
	fs.Lookup("at-reboot").NoOptDefVal = string(atreboot.ModeAuto)
	fs.DurationVar(&f.AtRebootTimeout, "at-reboot-timeout", defaultAtRebootTimeout, "With --at-reboot: how long the reboot waits for the migration to complete, retrying; then it goes on once the bundle is in the registry, leaving a record of what to run")
	fs.BoolVar(&f.Disarm, "disarm", false, "Remove what --at-reboot wrote (its units, stopped without running, and its settings), and nothing else")
}

// armedFlags are the flags that are not passed on to the migration at the
// reboot: the arming's own, and those the spec carries resolved.
var armedFlags = []string{"at-reboot", "at-reboot-timeout", "disarm", "output", "dry-run", "no-progress",
	"data-dir", "state-dir", "spool-dir", "no-spool", "registry-config", "namespace", "target-kubeconfig"}

// armedPathFlags name local files or directories: made absolute, as the
// units run from /.
var armedPathFlags = []string{"source-kubeconfig", "identity", "agent-service-config", "manifests-dir",
	"db-env-file", "recipients-file", "ca-file", "target-data-dir"}

// sourceFlags say what goes into the bundle: a migration that finishes from
// a pushed bundle needs none of them.
var sourceFlags = []string{"db", "db-env-file", "db-from-env", "db-exclude-table", "db-exclude-table-data", "db-deferrable",
	"data-dir", "exclude", "resources", "source-kubeconfig", "source-namespace", "local-auth-namespace",
	"manifests-dir", "live", "spool-dir", "no-spool", "recipient", "recipients-file"}

// validateRequired checks the flags migrate needs unless it disarms.
func (o *MigrateOptions) validateRequired() error {
	var missing []string
	if o.To == "" {
		missing = append(missing, `"to"`)
	}
	if o.TargetKubeconfig == "" {
		missing = append(missing, `"target-kubeconfig"`)
	}
	if len(missing) > 0 {
		return fmt.Errorf("required flag(s) %s not set", strings.Join(missing, ", "))
	}
	return nil
}

// validateDisarm: --disarm takes only -o.
func (o *MigrateOptions) validateDisarm() error {
	var others []string
	o.cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != "disarm" && f.Name != "output" {
			others = append(others, "--"+f.Name)
		}
	})
	if len(others) > 0 {
		return fmt.Errorf("--disarm removes what --at-reboot wrote and takes no other flag (got %s)", strings.Join(others, ", "))
	}
	return o.Output.Validate()
}

// validateAtReboot checks --at-reboot and what it cannot work with.
func (o *MigrateOptions) validateAtReboot() error {
	if o.AtReboot == "" {
		if o.cmd.Flags().Changed("at-reboot-timeout") {
			return errors.New("--at-reboot-timeout needs --at-reboot")
		}
		return nil
	}
	if _, err := atreboot.ParseMode(o.AtReboot); err != nil {
		return err
	}
	if o.AtRebootTimeout <= 0 {
		return fmt.Errorf("--at-reboot-timeout %s: give a positive duration", o.AtRebootTimeout)
	}
	return nil
}

// armedSpec is the spec of the migration o describes, as the units run it.
func (o *MigrateOptions) armedSpec(ctx context.Context) (*atreboot.Spec, []string, error) {
	var notes []string
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("find this kubectl-assisted binary for the units: %w", err)
	}
	abs := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		return filepath.Abs(p)
	}
	var args []string
	var visitErr error
	o.cmd.Flags().Visit(func(f *pflag.Flag) {
		if slices.Contains(armedFlags, f.Name) {
			return
		}
		var vals []string
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			vals = sv.GetSlice()
		} else {
			vals = []string{f.Value.String()}
		}
		for _, v := range vals {
			if slices.Contains(armedPathFlags, f.Name) {
				a, err := abs(v)
				if err != nil {
					visitErr = err
				}
				v = a
			}
			args = append(args, "--"+f.Name+"="+v)
		}
	})
	if visitErr != nil {
		return nil, nil, visitErr
	}
	stateDir, err := abs(o.StateDir)
	if err != nil {
		return nil, nil, err
	}
	kubeconfig, err := abs(o.TargetKubeconfig)
	if err != nil {
		return nil, nil, err
	}
	args = append(args, "--state-dir="+stateDir, "--target-kubeconfig="+kubeconfig, "--namespace="+o.opts.Namespace, "--no-progress")
	spoolDir := ""
	if o.opts.SpoolDir != "" {
		if spoolDir, err = abs(o.opts.SpoolDir); err != nil {
			return nil, nil, err
		}
		args = append(args, "--spool-dir="+spoolDir)
	} else if o.NoSpool {
		args = append(args, "--no-spool")
	}
	// The unit has neither this shell's HOME nor its XDG_RUNTIME_DIR: the
	// auth file that has the registry's credential now is named explicitly.
	authFile, authNote := o.pinAuthFile(ctx)
	if authNote != "" {
		notes = append(notes, authNote)
	}
	if authFile != "" {
		args = append(args, "--registry-config="+authFile)
	}

	s := &atreboot.Spec{Mode: atreboot.Mode(o.AtReboot), Binary: bin, Args: args,
		Ref: o.opts.Ref.String(), Target: o.opts.Target, Namespace: o.opts.Namespace, StateDir: stateDir,
		Kubeconfig: kubeconfig, Context: o.TargetContext, Exclude: o.Exclude,
		Timeout: atreboot.Duration(o.AtRebootTimeout), CaptureTimeout: atreboot.Duration(captureTimeout)}
	if o.DataDir != "" {
		if s.DataDir, err = abs(o.DataDir); err != nil {
			return nil, nil, err
		}
		if s.Mode == atreboot.ModeAuto {
			base := spoolDir
			if base == "" {
				base = stateDir
			}
			s.CaptureDir = filepath.Join(base, "at-reboot-data")
		}
	}
	for _, p := range []string{spoolDir, authFile} {
		if p != "" {
			s.ExtraMounts = append(s.ExtraMounts, p)
		}
	}
	o.cmd.Flags().Visit(func(f *pflag.Flag) {
		if slices.Contains(armedPathFlags, f.Name) {
			for _, v := range flagValues(f) {
				if a, err := abs(v); err == nil && a != "" {
					s.ExtraMounts = append(s.ExtraMounts, a)
				}
			}
		}
	})
	return s, notes, nil
}

func flagValues(f *pflag.Flag) []string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return []string{f.Value.String()}
}

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

// runArm arms node 0 (or, with --dry-run, says what it would write).
func (o *MigrateOptions) runArm(ctx context.Context) error {
	// Node 0 first: on another host nothing else matters.
	if _, err := atreboot.NodeZero(""); err != nil {
		return armError(err)
	}
	spec, notes, err := o.armedSpec(ctx)
	if err != nil {
		return err
	}
	checks, err := o.armChecks(ctx, spec)
	if err != nil {
		return err
	}
	res, err := atreboot.Arm(ctx, atreboot.ArmOptions{Spec: *spec, DryRun: o.DryRun})
	if err != nil {
		return armError(err)
	}
	return o.printArmed(res, append(notes, checks...))
}

func armError(err error) error {
	var nz *atreboot.NotNodeZeroError
	var be *atreboot.BudgetError
	switch {
	case errors.As(err, &nz):
		return clierr.New(err, "Arm on node 0, the host that runs assisted-service, before the installer reboots it.", clierr.ExitError)
	case errors.Is(err, atreboot.ErrNoSystemd):
		return clierr.New(err, "Arm on node 0 itself, under its systemd.", clierr.ExitError)
	case errors.As(err, &be):
		return clierr.New(err, fmt.Sprintf("Give a shorter --at-reboot-timeout (at most %s).", be.Budget.HardLimit.Truncate(time.Second)), clierr.ExitUsage)
	}
	return err
}

// MigrateArmed is the -o json|yaml result of `migrate --at-reboot`.
type MigrateArmed struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Mode       atreboot.Mode     `json:"mode"`
	DryRun     bool              `json:"dryRun,omitempty"`
	Reference  string            `json:"reference"`
	Namespace  string            `json:"namespace"`
	StateDir   string            `json:"stateDir"`
	Timeout    string            `json:"timeout"`
	HardLimit  string            `json:"hardLimit"`
	Checks     []string          `json:"checks"`
	Units      map[string]string `json:"unitFiles,omitempty"`
	*atreboot.ArmResult
}

func (o *MigrateOptions) printArmed(res *atreboot.ArmResult, checks []string) error {
	s := res.Spec
	if o.Output.Machine() {
		out := &MigrateArmed{APIVersion: ResultAPIVersion, Kind: "MigrateArmed", Mode: s.Mode, DryRun: o.DryRun,
			Reference: s.Ref, Namespace: s.Namespace, StateDir: s.StateDir, Timeout: s.Timeout.D().String(),
			HardLimit: s.HardLimit.D().String(), Checks: checks, ArmResult: res}
		if o.DryRun {
			out.Units = map[string]string{}
			for _, u := range res.UnitFiles {
				out.Units[u.Name] = u.Text
			}
		}
		return o.Output.Print(o.out, out)
	}
	w := o.out
	switch {
	case o.DryRun:
		fmt.Fprintf(w, "Would arm node 0 (%s, %s); nothing was written.\n", s.Mode, res.NodeZero)
	case res.Changed:
		fmt.Fprintf(w, "Armed node 0 (%s, %s).\n", s.Mode, res.NodeZero)
	default:
		fmt.Fprintf(w, "Node 0 is already armed exactly so (%s); nothing changed.\n", s.Mode)
	}
	fmt.Fprintln(w, "Checked now:")
	for _, c := range checks {
		fmt.Fprintf(w, "  - %s\n", c)
	}
	fmt.Fprintln(w, "At node 0's reboot (shutdown -r from the installer), in this order:")
	n := 1
	if s.CaptureDir != "" {
		fmt.Fprintf(w, "  %d. before assisted-service.service stops: copy %s to %s\n", n, s.DataDir, s.CaptureDir)
		n++
	}
	if s.Mode == atreboot.ModeAuto {
		fmt.Fprintf(w, "  %d. after assisted-service.service stopped, before assisted-service-db.service stops: migrate\n", n)
		fmt.Fprintf(w, "     %s to cluster 0 (namespace %s), retried for up to %s\n", s.Ref, s.Namespace, s.Timeout.D())
	} else {
		fmt.Fprintf(w, "  %d. wait until cluster 0 holds the receipt of the bundle this migration pushed (run migrate\n", n)
		fmt.Fprintf(w, "     with the same --to, --target-kubeconfig, -n and --state-dir before the reboot), for up to %s\n", s.Timeout.D())
	}
	n++
	fmt.Fprintf(w, "  %d. then the reboot goes on; if the migration did not complete, once the bundle is in the\n", n)
	fmt.Fprintf(w, "     registry (held at most %s: %s),\n", s.HardLimit.D(), res.Budget.Explain())
	fmt.Fprintf(w, "     leaving a record in the journal, in %s and in ConfigMap %s/%s\n", s.StateDir, s.Namespace, atreboot.RecordConfigMap)
	if o.DryRun {
		for _, u := range res.UnitFiles {
			fmt.Fprintf(w, "\n--- %s ---\n%s", filepath.Join(atreboot.DefaultUnitDir, u.Name), u.Text)
		}
		return nil
	}
	fmt.Fprintf(w, "Units: %s; settings: %s (0600)\n", strings.Join(res.Units, ", "), res.SpecPath)
	fmt.Fprintf(w, "Disarm: %s assisted migrate --disarm\n", o.env.Caller)
	return nil
}

// runDisarm removes what --at-reboot wrote.
func (o *MigrateOptions) runDisarm(ctx context.Context) error {
	res, err := atreboot.Disarm(ctx, atreboot.DisarmOptions{})
	if err != nil {
		return err
	}
	if o.Output.Machine() {
		return o.Output.Print(o.env.Streams.Out, struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			*atreboot.DisarmResult
		}{ResultAPIVersion, "MigrateDisarmed", res})
	}
	w := o.env.Streams.Out
	if !res.WasArmed {
		fmt.Fprintln(w, "Nothing is armed here; nothing changed.")
		return nil
	}
	fmt.Fprintln(w, "Disarmed: the reboot is no longer held and nothing runs at it.")
	if len(res.Stopped) > 0 {
		fmt.Fprintf(w, "Stopped (without running): %s\n", strings.Join(res.Stopped, ", "))
	}
	for _, p := range res.Removed {
		fmt.Fprintf(w, "Removed %s\n", p)
	}
	return nil
}

// redactDSN removes a connection string from a message.
func redactDSN(msg, dsn string) string {
	if dsn == "" {
		return msg
	}
	return strings.ReplaceAll(msg, dsn, "<connection string>")
}
