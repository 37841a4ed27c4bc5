package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
	"github.com/kubectl-assisted/kubectl-assisted/restore/switchover"
)

// HandoverSecret is where a restore leaves the token it minted for the
// assisted-installer-controller (key HandoverTokenKey), in the restore's namespace.
const (
	HandoverSecret   = migrate.HandoverSecret
	HandoverTokenKey = migrate.HandoverTokenKey
)

// SwitchoverOptions are the resolved inputs of `switchover`.
type SwitchoverOptions struct {
	cmdEnv
	switchover.Options
	// TokenNamespace is where the restore left HandoverSecret (-n).
	TokenNamespace string
	RedirectListen string
	skipVerify     bool
	Output         option.Output
	Client         kubernetes.Interface
}

// NewCmdSwitchover builds `switchover`.
func NewCmdSwitchover(env *Env) *cobra.Command {
	o := &SwitchoverOptions{}
	cmd := &cobra.Command{
		Use:   "switchover --service-url URL [--redirect-listen ADDR]",
		Short: "Point the clients of node 0's assisted-service at cluster 0",
		Long: `Point the clients that outlive node 0 at cluster 0's assisted-service.

The assisted-installer-controller Job (namespace assisted-installer) reads its
service URL from the ConfigMap assisted-installer-controller-config and its token
from the Secret assisted-installer-controller-secret when it starts: switchover
writes the new URL and a token cluster 0's service accepts: the one migrate minted
(Secret ` + HandoverSecret + ` in the restore's namespace) or, when there is none
(restore leaves none), one it mints with cluster 0's local-auth key for the
cluster the controller's ConfigMap names (cluster-id). A current token that
verifies on cluster 0 (node 0's key was carried) is kept unless --rotate-tokens.
It then restarts the controller's pods and prints the URL for UI users. Running
it twice changes nothing the second time.

With --redirect-listen, it then keeps answering requests to node 0's old address
with redirects to the new one until it is stopped (Ctrl-C) or node 0 reboots.`,
		Example: env.Example(`
  # Switch the controller on cluster 0 to the restored service
  %[1]s assisted switchover --kubeconfig cluster0.kubeconfig -n multicluster-engine \
      --service-url https://assisted-service-multicluster-engine.apps.c0.example.com

  # Preview the change
  %[1]s assisted switchover --kubeconfig cluster0.kubeconfig --service-url https://... --dry-run

  # Also redirect node 0's old API address until the reboot
  %[1]s assisted switchover --kubeconfig cluster0.kubeconfig --service-url https://... \
      --redirect-listen 0.0.0.0:8090`),
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&o.ServiceURL, "service-url", "", "Cluster 0's assisted-service URL (https://...)")
	fs.StringVar(&o.Namespace, "controller-namespace", switchover.DefaultNamespace, "Namespace of the assisted-installer-controller")
	fs.StringVar(&o.Token, "controller-token", "", "Token for the controller (default: the one migrate left in Secret "+HandoverSecret+", else one minted with cluster 0's local-auth key)")
	fs.StringVar(&o.CACertPath, "ca-cert-path", "", "Path, on the control-plane hosts, of the CA that signs the new service's certificate")
	fs.BoolVar(&o.skipVerify, "skip-cert-verification", false, "Make the controller skip TLS verification of the new service (insecure)")
	fs.BoolVar(&o.RotateToken, "rotate-tokens", false, "Write the restore's new token even when the controller's current one verifies on cluster 0 (node 0's key carried over)")
	fs.BoolVar(&o.NoRestart, "no-restart", false, "Do not restart the controller's pods")
	fs.BoolVar(&o.DryRun, "dry-run", false, "Only print what would change")
	fs.StringVar(&o.RedirectListen, "redirect-listen", "", "After switching, serve redirects to the new URL on this address (e.g. 0.0.0.0:8090) until stopped")
	o.Output.AddFlags(fs)
	env.Kube.AddFlags(fs)
	return wire(env, cmd, o)
}

// Complete sets SkipCertVerification only when the flag was given (unset
// keeps the controller's setting).
func (o *SwitchoverOptions) Complete([]string) error {
	if o.cmd.Flags().Changed("skip-cert-verification") {
		o.SkipCertVerification = &o.skipVerify
	}
	return nil
}

// Validate checks the flags.
func (o *SwitchoverOptions) Validate() error {
	if o.ServiceURL == "" {
		return errors.New("--service-url is required: give cluster 0's assisted-service URL (restore prints it)")
	}
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if o.RedirectListen != "" {
		if _, _, err := net.SplitHostPort(o.RedirectListen); err != nil {
			return fmt.Errorf("--redirect-listen %q: %v (give HOST:PORT, such as 0.0.0.0:8090)", o.RedirectListen, err)
		}
	}
	return o.Output.Validate()
}

// resolve builds the client, and reads the namespace and the token the
// restore left.
func (o *SwitchoverOptions) resolve(ctx context.Context) error {
	env := o.env
	ns, _, err := env.Kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return clierr.New(fmt.Errorf("namespace: %w", err), "Check --kubeconfig and --context.", clierr.ExitUsage)
	}
	o.TokenNamespace = ns
	cfg, err := env.Kube.ToRESTConfig()
	if err != nil {
		return clierr.New(fmt.Errorf("cluster 0's kubeconfig: %w", err), "Pass --kubeconfig (and --context) for cluster 0.", clierr.ExitError)
	}
	if o.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if o.Token != "" {
		return nil
	}
	s, err := o.Client.CoreV1().Secrets(ns).Get(ctx, HandoverSecret, metav1.GetOptions{})
	handover := false
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read the restore's token: %w", err)
	default:
		o.Token, handover = string(s.Data[HandoverTokenKey]), true
	}
	// The controller's current token may verify on cluster 0 already (the
	// restore carried node 0's key): switchover then keeps it.
	la, err := o.Client.CoreV1().Secrets(ns).Get(ctx, auth.LocalAuthSecretName, metav1.GetOptions{})
	switch {
	case err == nil:
		o.LocalAuthPublicKey = la.Data[auth.KeyECPublic]
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read cluster 0's local-auth key: %w", err)
	}
	if handover {
		return nil
	}
	// `restore` leaves no token (migrate does): mint one, as migrate does,
	// with cluster 0's key for the cluster the controller names. Without it
	// the controller keeps node 0's token, which cluster 0 refuses when node
	// 0's key was not carried (an agent-based node 0): seen in the rehearsal,
	// 401 on every call, and the installation never completes.
	if la == nil || len(la.Data[auth.KeyECPrivate]) == 0 {
		fmt.Fprintf(env.Streams.ErrOut, "warning: no Secret %s/%s from a restore and no %s key to mint one: the controller keeps its current token\n", ns, HandoverSecret, auth.LocalAuthSecretName)
		return nil
	}
	kp, err := auth.KeyPairFromSecret(la.Data)
	if err != nil {
		return fmt.Errorf("cluster 0's local-auth Secret %s/%s: %w", ns, auth.LocalAuthSecretName, err)
	}
	cns := o.Options.Namespace
	if cns == "" {
		cns = switchover.DefaultNamespace
	}
	cm, err := o.Client.CoreV1().ConfigMaps(cns).Get(ctx, switchover.ConfigMapName, metav1.GetOptions{})
	if err != nil || cm.Data[switchover.KeyClusterID] == "" {
		// Run reports a missing controller; a ConfigMap without cluster-id
		// leaves the token as it is.
		if err == nil {
			fmt.Fprintf(env.Streams.ErrOut, "warning: %s/%s names no %s: the controller keeps its current token\n", cns, switchover.ConfigMapName, switchover.KeyClusterID)
		}
		return nil
	}
	tok, err := kp.MintClusterToken(cm.Data[switchover.KeyClusterID], auth.MintOptions{})
	if err != nil {
		return err
	}
	o.Token = tok.Reveal()
	fmt.Fprintf(env.Streams.ErrOut, "no Secret %s/%s from a restore: a token for cluster %s is minted with cluster 0's %s key (kept out of the output)\n",
		ns, HandoverSecret, cm.Data[switchover.KeyClusterID], auth.LocalAuthSecretName)
	return nil
}

// SwitchoverResult is the -o json|yaml result.
type SwitchoverResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*switchover.Result
}

// Run switches, reports, and then optionally serves redirects.
func (o *SwitchoverOptions) Run(ctx context.Context) error {
	if err := o.resolve(ctx); err != nil {
		return err
	}
	env := o.env
	res, err := switchover.Run(ctx, o.Client, o.Options)
	if errors.Is(err, switchover.ErrControllerNotFound) {
		return clierr.New(err, "The controller only exists while cluster 0 finishes installing; nothing needs switching after it is gone.", clierr.ExitError)
	}
	if err != nil {
		return err
	}
	if o.Output.Machine() {
		if err := o.Output.Print(env.Streams.Out, SwitchoverResult{APIVersion: ResultAPIVersion, Kind: "Switchover", Result: res}); err != nil {
			return err
		}
	} else {
		verb := "changed"
		if res.DryRun {
			verb = "would change"
		}
		for _, c := range res.Changes {
			fmt.Fprintf(env.Streams.Out, "%s %s %s: %q -> %q\n", verb, c.Object, c.Key, c.From, c.To)
		}
		if res.TokenKept {
			fmt.Fprintln(env.Streams.Out, "the controller's token verifies on cluster 0 (node 0's key was carried over): kept; --rotate-tokens replaces it")
		}
		if len(res.Changes) == 0 {
			fmt.Fprintln(env.Streams.Out, "the controller already points at the new service")
		}
		for _, p := range res.RestartedPods {
			fmt.Fprintf(env.Streams.Out, "restarted pod %s/%s\n", o.Namespace, p)
		}
		fmt.Fprintf(env.Streams.Out, "assisted-service for UI and API users: %s\n", o.ServiceURL)
	}
	if o.RedirectListen == "" || o.DryRun {
		return nil
	}
	return serveRedirects(ctx, env, o.RedirectListen, o.ServiceURL)
}

func serveRedirects(ctx context.Context, env *Env, addr, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("redirect listener: %w", err)
	}
	srv := &http.Server{Handler: &switchover.Redirector{Target: u}, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Streams.ErrOut, "redirecting http://%s/... to %s until stopped\n", l.Addr(), target)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
