package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/waitfor"
)

// WaitForOptions are the resolved inputs of `wait-for restore-complete`.
type WaitForOptions struct {
	cmdEnv
	noArgs
	Digest    string
	Namespace string
	Timeout   time.Duration
	Interval  time.Duration
	Output    option.Output
	Client    kubernetes.Interface
}

// NewCmdWaitFor builds `wait-for` and its one condition, `restore-complete`.
func NewCmdWaitFor(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wait-for",
		Short: "Wait for a condition on cluster 0",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdWaitForRestoreComplete(env))
	return cmd
}

func newCmdWaitForRestoreComplete(env *Env) *cobra.Command {
	o := &WaitForOptions{}
	cmd := &cobra.Command{
		Use:   "restore-complete --bundle DIGEST [--timeout D]",
		Short: "Block until cluster 0 holds the receipt of this bundle's restore",
		Long: `Block until cluster 0 holds the receipt of the restore of exactly this bundle,
with every phase done, then exit 0. To hold node 0's reboot until then, arm node 0
with 'migrate --at-reboot' (or --at-reboot=manual when you migrate by hand): its
systemd unit waits for the same receipt at the reboot (docs/migrate.md).

Exit codes (docs/exit-codes.md): 0 restored; 30 timed out; 31 the restore failed
(the reason is printed); 32 cluster 0 holds a receipt for another bundle, or an
incomplete one; 1 other errors; 2 usage. It never exits 0 for another digest or a
failed restore.`,
		Example: env.Example(`
  # Hold node 0 until cluster 0 is restored from the bundle just pushed
  %[1]s assisted wait-for restore-complete --kubeconfig cluster0.kubeconfig \
      -n multicluster-engine --bundle sha256:4f1c... --timeout 30m`),
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&o.Digest, "bundle", "", "Digest of the bundle whose restore to wait for (sha256:...)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 30*time.Minute, "How long to wait before giving up")
	cmd.Flags().DurationVar(&o.Interval, "interval", 2*time.Second, "How often to look")
	o.Output.AddFlags(cmd.Flags())
	env.Kube.AddFlags(cmd.Flags())
	return wire(env, cmd, o)
}

// Validate checks the flags.
func (o *WaitForOptions) Validate() error {
	if o.Digest == "" {
		return errors.New("--bundle DIGEST is required: give the digest that bundle create or bundle inspect printed")
	}
	if _, err := journal.ReceiptName(o.Digest); err != nil {
		return fmt.Errorf("--bundle %q is not a digest: give sha256:<64 hex>, as bundle inspect prints it", o.Digest)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout %s: give a positive duration (30m, 1h)", o.Timeout)
	}
	if o.Interval <= 0 {
		return fmt.Errorf("--interval %s: give a positive duration (2s)", o.Interval)
	}
	return o.Output.Validate()
}

// resolve reads the namespace and builds the client from the kube flags.
func (o *WaitForOptions) resolve() error {
	ns, _, err := o.env.Kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return clierr.New(fmt.Errorf("namespace: %w", err), "Check --kubeconfig and --context.", clierr.ExitUsage)
	}
	o.Namespace = ns
	if o.Client != nil {
		return nil
	}
	cfg, err := o.env.Kube.ToRESTConfig()
	if err != nil {
		return clierr.New(fmt.Errorf("cluster 0's kubeconfig: %w", err), "Pass --kubeconfig (and --context) for cluster 0.", clierr.ExitError)
	}
	o.Client, err = kubernetes.NewForConfig(cfg)
	return err
}

// WaitForResult is the -o json|yaml result.
type WaitForResult struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Namespace  string           `json:"namespace"`
	Receipt    *journal.Receipt `json:"receipt"`
}

// Run waits and reports.
func (o *WaitForOptions) Run(ctx context.Context) error {
	if err := o.resolve(); err != nil {
		return err
	}
	env := o.env
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	last := ""
	rec, err := waitfor.Wait(ctx, o.Client, o.Namespace, o.Digest, waitfor.Options{
		Interval: o.Interval,
		OnStatus: func(s waitfor.Status) {
			line := s.State
			if s.Phase != "" {
				line += " (phase " + s.Phase + ")"
			}
			if s.Err != nil {
				line += ": " + s.Err.Error()
			}
			if line != last {
				fmt.Fprintf(env.Streams.ErrOut, "waiting for the restore of %s in %s: %s\n", o.Digest, o.Namespace, line)
				last = line
			}
		},
	})
	if err != nil {
		return waitForError(err)
	}
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, WaitForResult{APIVersion: ResultAPIVersion, Kind: "RestoreReceipt", Namespace: o.Namespace, Receipt: rec})
	}
	fmt.Fprintf(env.Streams.Out, "restore of %s complete at %s (phases: %v)\n", rec.BundleDigest, rec.CompletedAt.Format(time.RFC3339), rec.Phases)
	return nil
}
