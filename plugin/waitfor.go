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

// Exit codes of wait-for, distinct so a systemd unit or script can tell why.
const (
	waitForExitTimeout     = 3 // no receipt before --timeout
	waitForExitFailed      = 4 // the restore recorded a failed phase
	waitForExitOtherBundle = 5 // cluster 0 holds a receipt for another bundle, or an incomplete one
)

// WaitForOptions are the resolved inputs of `wait-for restore-complete`.
type WaitForOptions struct {
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
with every phase done, then exit 0. Node 0 runs this before it reboots (see
docs/examples/kubectl-assisted-wait-for-restore.service).

Exit codes: 0 restored; 3 timed out; 4 the restore failed (the reason is
printed); 5 cluster 0 holds a receipt for another bundle, or an incomplete one;
1 other errors; 2 usage. It never exits 0 for another digest or a failed restore.`,
		Example: env.Example(`
  # Hold node 0 until cluster 0 is restored from the bundle just pushed
  %[1]s assisted wait-for restore-complete --kubeconfig cluster0.kubeconfig \
      -n multicluster-engine --bundle sha256:4f1c... --timeout 30m`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(env); err != nil {
				return err
			}
			if err := o.Validate(cmd); err != nil {
				return err
			}
			return o.Run(cmd.Context(), env)
		},
	}
	cmd.Flags().StringVar(&o.Digest, "bundle", "", "Digest of the bundle whose restore to wait for (sha256:...)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 30*time.Minute, "How long to wait before giving up")
	cmd.Flags().DurationVar(&o.Interval, "interval", 2*time.Second, "How often to look")
	o.Output.AddFlags(cmd.Flags())
	env.Kube.AddFlags(cmd.Flags())
	return cmd
}

// Complete resolves the namespace and the client from the kube flags.
func (o *WaitForOptions) Complete(env *Env) error {
	ns, _, err := env.Kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	o.Namespace = ns
	cfg, err := env.Kube.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("cluster 0's kubeconfig: %w", err)
	}
	o.Client, err = kubernetes.NewForConfig(cfg)
	return err
}

// Validate checks the flags.
func (o *WaitForOptions) Validate(cmd *cobra.Command) error {
	if o.Digest == "" {
		return usageErr(cmd, fmt.Errorf("--bundle DIGEST is required"))
	}
	if _, err := journal.ReceiptName(o.Digest); err != nil {
		return usageErr(cmd, fmt.Errorf("--bundle %q is not a digest (want sha256:<64 hex>)", o.Digest))
	}
	if o.Timeout <= 0 {
		return usageErr(cmd, fmt.Errorf("--timeout must be positive"))
	}
	if err := o.Output.Validate(); err != nil {
		return usageErr(cmd, err)
	}
	return nil
}

// WaitForResult is the -o json|yaml result.
type WaitForResult struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Namespace  string           `json:"namespace"`
	Receipt    *journal.Receipt `json:"receipt"`
}

// Run waits and reports.
func (o *WaitForOptions) Run(ctx context.Context, env *Env) error {
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

func waitForError(err error) error {
	var failed *waitfor.RestoreFailedError
	var other *waitfor.OtherBundleError
	var inc *waitfor.IncompleteReceiptError
	switch {
	case errors.As(err, &failed):
		return clierr.New(err, "Fix the cause, then rerun the same restore (or migrate): it resumes where it stopped.", waitForExitFailed)
	case errors.As(err, &other), errors.As(err, &inc):
		return clierr.New(err, "Check that node 0 and cluster 0 agree on the bundle: `kubectl assisted bundle inspect REF` prints its digest.", waitForExitOtherBundle)
	case errors.Is(err, waitfor.ErrTimeout):
		return clierr.New(err, "", waitForExitTimeout)
	}
	return err
}
