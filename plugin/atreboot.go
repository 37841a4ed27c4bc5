package plugin

import (
	"context"
	"errors"
	"fmt"

	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
)

// NewCmdAtReboot builds `at-reboot`, what the units `migrate --at-reboot`
// writes run. It is hidden: nobody runs it by hand.
func NewCmdAtReboot(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "at-reboot",
		Short:  "Run by the systemd units that migrate --at-reboot writes on node 0",
		Long:   "The commands of the units that 'migrate --at-reboot' writes on node 0. They read the armed settings\nfrom --spec and act only while systemd shuts the system down. Arm and disarm with 'migrate'.",
		Hidden: true,
		Args:   cobra.NoArgs,
	}
	cmd.AddCommand(newCmdAtRebootArmed(env), newCmdAtRebootCapture(env), newCmdAtRebootHold(env))
	return cmd
}

// atRebootOptions are the options every at-reboot command takes.
type atRebootOptions struct {
	cmdEnv
	noArgs
	SpecPath string
	Unit     string
}

func (o *atRebootOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.SpecPath, "spec", atreboot.DefaultSpecDir+"/"+atreboot.SpecFile, "The armed settings migrate --at-reboot wrote")
}

func (o *atRebootOptions) Validate() error {
	if o.SpecPath == "" {
		return errors.New("--spec is empty")
	}
	return nil
}

func (o *atRebootOptions) logf(format string, args ...any) {
	fmt.Fprintf(o.env.Streams.ErrOut, format+"\n", args...)
}

// load reads the spec; nil (and a journal line) when nothing is armed.
func (o *atRebootOptions) load() (*atreboot.Spec, error) {
	s, err := atreboot.LoadSpec(o.SpecPath)
	if errors.Is(err, atreboot.ErrNotArmed) {
		o.logf("not armed (%s is gone: disarmed): nothing to do", o.SpecPath)
		return nil, nil
	}
	return s, err
}

// AtRebootArmedOptions is `at-reboot armed`, the units' ExecStart.
type AtRebootArmedOptions struct{ atRebootOptions }

func newCmdAtRebootArmed(env *Env) *cobra.Command {
	o := &AtRebootArmedOptions{}
	cmd := &cobra.Command{Use: "armed --spec FILE", Short: "Check the armed settings and say what happens at the reboot (ExecStart)", Args: cobra.NoArgs}
	o.addFlags(cmd)
	cmd.Flags().StringVar(&o.Unit, "unit", "hold", "Which unit asks: hold or capture")
	return wire(env, cmd, o)
}

func (o *AtRebootArmedOptions) Run(context.Context) error {
	s, err := o.load()
	if err != nil || s == nil {
		if err == nil {
			err = atreboot.ErrNotArmed
		}
		return err
	}
	if o.Unit == "capture" {
		o.logf("armed: at node 0's reboot, before assisted-service stops, %s is copied to %s", s.DataDir, s.CaptureDir)
		return nil
	}
	switch s.Mode {
	case atreboot.ModeAuto:
		o.logf("armed (auto): at node 0's reboot, once assisted-service has stopped, %s moves to cluster 0 (%s, namespace %s); the reboot waits up to %s for it",
			s.Ref, s.Target, s.Namespace, s.Timeout.D())
	default:
		o.logf("armed (manual): node 0's reboot waits up to %s for cluster 0 (%s, namespace %s) to hold the receipt of the bundle migrated to %s",
			s.Timeout.D(), s.Target, s.Namespace, s.Ref)
	}
	return nil
}

// AtRebootCaptureOptions is `at-reboot capture`, the capture unit's ExecStop.
type AtRebootCaptureOptions struct{ atRebootOptions }

func newCmdAtRebootCapture(env *Env) *cobra.Command {
	o := &AtRebootCaptureOptions{}
	cmd := &cobra.Command{Use: "capture --spec FILE", Short: "Copy node 0's files before assisted-service stops (the capture unit's ExecStop)", Args: cobra.NoArgs}
	o.addFlags(cmd)
	return wire(env, cmd, o)
}

func (o *AtRebootCaptureOptions) Run(ctx context.Context) error {
	s, err := o.load()
	if err != nil || s == nil {
		return err
	}
	if s.CaptureDir == "" {
		o.logf("nothing to copy: no data directory is armed")
		return nil
	}
	if !atreboot.ShuttingDown(ctx, atreboot.Systemctl{}) {
		o.logf("stopped while the system keeps running: nothing copied; node 0 is no longer armed for its files (arm again)")
		return nil
	}
	start := time.Now()
	info, err := atreboot.Capture(ctx, s)
	if err != nil {
		o.logf("could not copy %s: %v; the migration bundles it as it is at the reboot, if it still exists", s.DataDir, err)
		return clierr.Silent(clierr.ExitError)
	}
	o.logf("copied %s to %s before assisted-service stops: %d files, %s, in %s", s.DataDir, s.CaptureDir,
		info.Summary.Files, files.HumanBytes(info.Summary.Bytes), time.Since(start).Round(time.Millisecond))
	return nil
}
