package plugin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
)

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
