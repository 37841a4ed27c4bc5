package plugin

import (
	"context"
	"errors"
	"fmt"

	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
	"github.com/kubectl-assisted/kubectl-assisted/restore/waitfor"
)

// AtRebootHoldOptions is `at-reboot hold`, the hold unit's ExecStop.
type AtRebootHoldOptions struct{ atRebootOptions }

func newCmdAtRebootHold(env *Env) *cobra.Command {
	o := &AtRebootHoldOptions{}
	cmd := &cobra.Command{Use: "hold --spec FILE", Short: "Run the migration and hold the reboot until cluster 0 holds its receipt (the hold unit's ExecStop)", Args: cobra.NoArgs}
	o.addFlags(cmd)
	return wire(env, cmd, o)
}

// migrateFromSpec builds the migration the spec describes, bundling dataDir.
func migrateFromSpec(env *Env, s *atreboot.Spec, dataDir string) (*MigrateOptions, error) {
	o := &MigrateOptions{}
	cmd := newCmdMigrate(env, o)
	args := append(slices.Clone(s.Args), "--data-dir="+dataDir)
	if err := cmd.ParseFlags(args); err != nil {
		return nil, clierr.Usage(cmd, err)
	}
	if err := o.Validate(); err != nil {
		return nil, clierr.Usage(cmd, err)
	}
	if err := o.resolve(); err != nil {
		return nil, err
	}
	if err := o.opts.Validate(); err != nil {
		return nil, o.usage(err)
	}
	return o, nil
}

// finishCommand is the migrate command that finishes the migration from a
// pushed bundle: the armed flags without the ones that read node 0.
func finishCommand(caller string, s *atreboot.Spec) []string {
	cmd := []string{caller, "assisted", "migrate"}
	for _, a := range s.Args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !slices.Contains(sourceFlags, name) {
			cmd = append(cmd, a)
		}
	}
	return cmd
}

// redactArgs hides the values of flags that may carry a password.
func redactArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		for _, f := range []string{"--target-db=", "--db="} {
			if strings.HasPrefix(a, f) {
				out[i] = f + "<the database URL given when arming>"
			}
		}
	}
	return out
}

func (o *AtRebootHoldOptions) Run(ctx context.Context) error {
	s, err := o.load()
	if err != nil || s == nil {
		return err
	}
	if !atreboot.ShuttingDown(ctx, atreboot.Systemctl{}) {
		o.logf("stopped while the system keeps running: nothing migrated, and the next reboot is not held (arm again: %s assisted migrate --at-reboot ...)", o.env.Caller)
		return nil
	}
	errOut := o.env.Streams.ErrOut
	o.logf("node 0 is rebooting: holding the reboot until cluster 0 has node 0's assisted-service (%s; up to %s, at most %s)", s.Mode, s.Timeout.D(), s.HardLimit.D())
	dataDir, note := atreboot.DataDirAtReboot(s)
	if note != "" && s.Mode == atreboot.ModeAuto {
		o.logf("%s", note)
	}
	// The migration runs in this process: its settings (a database URL with
	// its password) never reach a command line.
	menv := &Env{Streams: o.env.Streams, Kube: o.env.Kube, Caller: o.env.Caller}
	mo, moErr := migrateFromSpec(menv, s, dataDir)
	redact := func(msg string) string { return msg }
	var cs kubernetes.Interface
	if moErr == nil {
		src, tgt := mo.opts.SourceDB, mo.opts.TargetDB
		redact = func(msg string) string { return redactDSN(redactDSN(msg, src), tgt) }
		if cs, err = kubernetes.NewForConfig(mo.opts.Config); err != nil {
			cs = nil
		}
	}
	hostname, _ := os.Hostname()
	ho := atreboot.HoldOptions{
		Spec: s, Hostname: hostname, Redact: redact, FinishCommand: finishCommand(o.env.Caller, s), RedactArgs: redactArgs,
		Log: o.logf,
		State: func() (*migrate.State, error) {
			return migrate.LoadState(s.StateDir, s.Ref, s.Target, s.Namespace)
		},
		Attempt: func(ctx context.Context) error {
			if moErr != nil {
				return moErr
			}
			opts := mo.opts
			opts.OnEvent = (&migrateRenderer{w: errOut, ev: &eventPrinter{w: errOut}}).event
			res, err := migrate.Run(ctx, opts)
			if err != nil {
				return migrateError(err)
			}
			o.logf("migrated: cluster 0 holds the receipt of %s@%s", res.Reference, res.Digest)
			return nil
		},
		Push: func(ctx context.Context) error {
			if moErr != nil {
				return moErr
			}
			opts := mo.opts
			opts.OnEvent = (&migrateRenderer{w: errOut, ev: &eventPrinter{w: errOut}}).event
			res, err := migrate.PushOnly(ctx, opts)
			if err == nil {
				o.logf("the bundle is in the registry: %s@%s", res.Reference, res.Digest)
			}
			return err
		},
		Retriable: func(err error) bool {
			var oe *migrate.OptionsError
			return !errors.As(err, &oe) && clierr.ExitCode(err) != clierr.ExitUsage
		},
		InRegistry: func(ctx context.Context, st *migrate.State) error {
			if moErr != nil {
				return moErr
			}
			signer, _, err := st.Signer()
			if err != nil {
				return err
			}
			return migrate.RegistryBundles{Registry: mo.opts.Registry}.Check(ctx, st.Pinned, signer)
		},
		WaitReceipt: func(ctx context.Context, digest string) error {
			if cs == nil {
				return fmt.Errorf("cluster 0: %v", moErr)
			}
			last := ""
			_, err := waitfor.Wait(ctx, cs, s.Namespace, digest, waitfor.Options{Interval: 2 * time.Second, OnStatus: func(st waitfor.Status) {
				if line := st.State + " " + st.Phase; line != last {
					last = line
					o.logf("cluster 0: %s", strings.TrimSpace(line))
				}
			}})
			return err
		},
	}
	if cs != nil {
		ho.RecordOnCluster = func(ctx context.Context, r *atreboot.Record) error {
			rc := *r
			rc.FinishCommand = redactArgs(r.FinishCommand)
			return atreboot.WriteRecordConfigMap(ctx, cs, s.Namespace, &rc)
		}
	}
	res, err := atreboot.Hold(ctx, ho)
	if err != nil {
		return err
	}
	if res.Outcome == atreboot.OutcomeMigrated || res.Outcome == atreboot.OutcomePushed {
		// The bundle has the files: their copy in the clear goes.
		if err := atreboot.RemoveCapture(s); err != nil {
			o.logf("could not remove the copy of the files %s: %v", s.CaptureDir, err)
		}
	}
	if res.Outcome == atreboot.OutcomeMigrated {
		o.logf("done after %s: node 0 may reboot", res.Held.Round(time.Second))
		return nil
	}
	o.logf("letting the reboot go on after %s (%s)", res.Held.Round(time.Second), res.Outcome)
	return clierr.Silent(clierr.ExitError)
}
