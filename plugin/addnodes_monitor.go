package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/day2/monitor"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
)

const monitorLong = `Follow each host of nodes-config.yaml until it is a Ready node: reachable, its local
assisted-service API up (validations, installation progress), kubelet up, its first
(client) and second (serving) CSRs pending and approved, Node joined, Node Ready.

Hosts are reached on the static IPs of their networkConfig; --ip-addresses adds or
replaces them (HOSTNAME=IP, or a bare IP when there is one host). The token for the
hosts' assisted-service is read from Secret openshift-config/agent-auth-token.

CSRs are matched to hosts without reverse DNS: by the node name they request
(system:node:<hostname>) and by their IP addresses. With --approve-csrs, a CSR is
approved only when every rule holds: for the client CSR, requested by the
node-bootstrapper service account (or the node itself), CN system:node:<hostname>,
O system:nodes, exactly the kubelet's usages, no SANs, an acceptable key, and no Node
of that name yet; for the serving CSR, requested by system:node:<hostname> itself,
SANs only the host's hostname and IPs, usages server auth + digital signature
(+ key encipherment). One approval per expected CSR, only while the monitor runs;
every other CSR is reported with the reasons it was not approved. Without
--approve-csrs nothing is approved and the monitor says which CSRs would be.

Exit codes (docs/exit-codes.md): 0 every host is a Ready node; 1 error; 2 usage;
30 timeout; 33 a host's validations kept failing; 34 a host waits for a CSR that was
not approved; 35 a host's installation failed; 130 interrupted. With -o json|yaml
the summary goes to stdout; progress always goes to stderr.`

// AddNodesMonitorOptions holds the inputs of `add-nodes monitor`.
type AddNodesMonitorOptions struct {
	cmdEnv
	noArgs
	ConfigFile   string
	IPAddresses  []string
	ApproveCSRs  bool
	Timeout      time.Duration
	PollInterval time.Duration
	Output       option.Output
	Terminal     option.Terminal

	// Resolved by Complete.
	Hosts     []monitor.Host
	Kube      kubernetes.Interface
	AuthToken string
	// TokenWarning says why no token could be read (the monitor still runs).
	TokenWarning string
}

// AddNodesMonitorResult is the -o json|yaml document.
type AddNodesMonitorResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	ExitCode   int    `json:"exitCode"`
	monitor.Result
}

func newCmdAddNodesMonitor(env *Env) *cobra.Command {
	o := &AddNodesMonitorOptions{Timeout: monitor.DefaultTimeout, PollInterval: monitor.DefaultPollInterval}
	cmd := &cobra.Command{
		Use:   "monitor -f nodes-config.yaml [--ip-addresses IPS] [--approve-csrs] [--timeout D] [-o json|yaml]",
		Short: "Follow new hosts until they are Ready nodes, approving only their own CSRs",
		Long:  monitorLong,
		Example: env.Example(`
  # Follow the hosts of nodes-config.yaml and approve their kubelet CSRs
  %[1]s assisted add-nodes monitor -f nodes-config.yaml --approve-csrs

  # A host without static IPs in nodes-config.yaml, summary as JSON
  %[1]s assisted add-nodes monitor -f nodes-config.yaml --ip-addresses extra-worker-0=192.168.111.90 -o json`),
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.ConfigFile, "filename", "f", "", "nodes-config.yaml describing the new hosts")
	fs.StringSliceVar(&o.IPAddresses, "ip-addresses", nil, "Host IPs as HOSTNAME=IP (replaces the host's networkConfig IPs), or bare IPs with a single host; comma-separated or repeated")
	fs.BoolVar(&o.ApproveCSRs, "approve-csrs", false, "Approve the hosts' kubelet CSRs that pass every rule (see above); others are reported, never approved")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long to wait for every host to become a Ready node")
	fs.DurationVar(&o.PollInterval, "poll-interval", o.PollInterval, "Time between two rounds of checks")
	o.Output.AddFlags(fs)
	o.Terminal.AddFlags(fs)
	env.Kube.AddFlags(fs)
	return wire(env, cmd, o)
}

// Validate checks the flags alone.
func (o *AddNodesMonitorOptions) Validate() error {
	if o.ConfigFile == "" {
		return errors.New("-f nodes-config.yaml is required: give the file add-nodes create was run with")
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %s: give a duration such as 90m", o.Timeout)
	}
	if o.PollInterval < 100*time.Millisecond {
		return fmt.Errorf("--poll-interval must be at least 100ms, got %s", o.PollInterval)
	}
	return o.Output.Validate()
}

// resolve reads nodes-config.yaml, resolves the host IPs, builds the
// Kubernetes client and reads the assisted-service token.
func (o *AddNodesMonitorOptions) resolve(ctx context.Context) error {
	env := o.env
	cfg, err := nodesconfig.Load(o.ConfigFile)
	if err != nil {
		return clierr.New(fmt.Errorf("read %s: %w", o.ConfigFile, err), "Give -f the nodes-config.yaml that add-nodes create was run with.", clierr.ExitUsage)
	}
	if err := cfg.Validate(); err != nil {
		return clierr.New(fmt.Errorf("%s: %w", o.ConfigFile, err), "Fix nodes-config.yaml (docs/add-nodes.md describes it).", clierr.ExitUsage)
	}
	if o.Hosts, err = monitor.HostsFromConfig(cfg, o.IPAddresses); err != nil {
		return clierr.New(err, "Give each host's IP with --ip-addresses HOSTNAME=IP.", clierr.ExitUsage)
	}
	rc, err := env.Kube.ToRESTConfig()
	if err != nil {
		return clierr.New(fmt.Errorf("kubeconfig: %w", err), "Check --kubeconfig and --context.", clierr.ExitError)
	}
	if o.Kube, err = kubernetes.NewForConfig(rc); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	if o.AuthToken, err = monitor.ReadAuthToken(ctx, o.Kube); err != nil {
		o.TokenWarning = err.Error() + ": the hosts' assisted-service API will refuse the monitor; the other stages are still followed"
	}
	return nil
}

// Run follows the hosts, prints the summary and returns an error carrying the
// exit code when not every host became Ready.
func (o *AddNodesMonitorOptions) Run(ctx context.Context) error {
	if err := o.resolve(ctx); err != nil {
		return err
	}
	env := o.env
	view := newMonitorView(env.Streams.ErrOut, o.Terminal.ShowProgress(env.Streams.ErrOut, &o.Output), o.Hosts)
	if o.TokenWarning != "" {
		view.event(monitor.Event{Time: time.Now(), Type: monitor.EventWarning, Message: o.TokenWarning})
	}
	res, err := monitor.Run(ctx, monitor.Options{
		Hosts: o.Hosts, Kube: o.Kube, AuthToken: o.AuthToken, ApproveCSRs: o.ApproveCSRs,
		Timeout: o.Timeout, PollInterval: o.PollInterval,
		OnEvent: view.event, OnPoll: view.poll,
	})
	view.close()
	if err != nil {
		return err
	}
	code := monitorExitCodes[res.Outcome]
	if o.Output.Machine() {
		doc := AddNodesMonitorResult{APIVersion: ResultAPIVersion, Kind: "AddNodesMonitorResult", ExitCode: code, Result: *res}
		if err := o.Output.Print(env.Streams.Out, doc); err != nil {
			return err
		}
	} else if err := printMonitorSummary(env.Streams.Out, res); err != nil {
		return err
	}
	if code == 0 {
		return nil
	}
	return clierr.New(monitorError(res), monitorRecommendation(res, o.ApproveCSRs), code)
}

func monitorError(res *monitor.Result) error {
	notReady := 0
	for _, h := range res.Hosts {
		if !h.Ready {
			notReady++
		}
	}
	switch res.Outcome {
	case monitor.OutcomeInterrupted:
		return fmt.Errorf("interrupted: %d of %d hosts are not Ready nodes", notReady, len(res.Hosts))
	case monitor.OutcomeTimeout:
		if notReady == 0 {
			return errors.New("timed out: every Node is Ready but a serving CSR was not approved")
		}
	}
	return fmt.Errorf("%d of %d hosts did not become Ready nodes (%s)", notReady, len(res.Hosts), res.Outcome)
}

func monitorRecommendation(res *monitor.Result, approving bool) string {
	switch res.Outcome {
	case monitor.OutcomeCSRBlocked:
		if !approving {
			return "Run again with --approve-csrs, or approve the hosts' CSRs by hand (kubectl certificate approve)."
		}
		return "See the reasons above: a CSR that breaks a rule is never approved automatically."
	case monitor.OutcomeValidationsFailing:
		return "Fix what the failing validations say on the hosts, then run the monitor again."
	}
	return "See each host's problem above."
}
