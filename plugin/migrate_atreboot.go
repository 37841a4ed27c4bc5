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

	"github.com/spf13/pflag"

	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
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
