package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
	"github.com/kubectl-assisted/kubectl-assisted/day2/iso"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodeimage"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
	"github.com/kubectl-assisted/kubectl-assisted/day2/release"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
)

// AddNodesCreateOptions holds the resolved inputs of `add-nodes create`.
type AddNodesCreateOptions struct {
	cmdEnv
	noArgs
	File               string
	Dir                string
	BaseISO            string
	PXE                bool
	Checksum           bool
	Compression        string
	ClusterProfile     string
	SaveClusterProfile string
	SingleHost         SingleHostFlags

	Registry option.Registry
	Output   option.Output
	Terminal option.Terminal

	// Resolved at the start of Run.
	nodes   *nodesconfig.Config
	profile *clusterinfo.Info
	kube    kubernetes.Interface
	dyn     dynamic.Interface
}

// NodeImageResult is the -o json|yaml result of `add-nodes create`.
type NodeImageResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	nodeimage.Result
}

// newCmdAddNodesCreate builds `add-nodes create`.
func newCmdAddNodesCreate(env *Env) *cobra.Command {
	o := &AddNodesCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create (-f nodes-config.yaml | --mac-address MAC) [--dir OUT] [--base-iso FILE] [--pxe]",
		Short: "Build, locally, the ISO (or PXE files) that lets new hosts join the cluster",
		Long: `Build the ISO that boots new hosts into an installed OpenShift cluster, on this
machine, from a kubeconfig: no pod runs on the cluster.

The cluster's configuration (release, proxy, pull secret, CA bundle, mirrors, SSH key,
FIPS, chrony, Machine Config Server endpoint) is read with your credentials, and
nodes-config.yaml is checked against it before any work: MACs, hostnames and static
IPs already used by nodes, nmstate, root device hints, SSH key, architecture. The
cluster must run OpenShift 4.17 to 4.20: the ISO speaks the auth of that release's
assisted-service (4.17: one token; 4.18+: agent, user and watcher tokens). The ISO is
valid for as long as its tokens (48 hours; tokens with more than 24 hours left are
reused). See docs/add-nodes.md.

The base ISO comes from the release payload's machine-os-images image (pulled with the
cluster's pull secret, through its mirrors), or from --base-iso. Save the cluster's
configuration with --save-cluster-profile to build later, offline, with
--cluster-profile.`,
		Example: env.Example(`
  # Build node.x86_64.iso in ./out for the hosts of nodes-config.yaml
  %[1]s assisted add-nodes create -f nodes-config.yaml --dir out

  # One host, no file: its MAC, hostname and static network
  %[1]s assisted add-nodes create --mac-address 00:f4:3d:a0:0e:2b --hostname extra-worker-0 \
      --network-config-path nmstate.yaml --dir out

  # PXE artifacts (and an iPXE script when bootArtifactsBaseURL is set)
  %[1]s assisted add-nodes create -f nodes-config.yaml --dir out --pxe

  # Save the cluster profile now, build offline later
  %[1]s assisted add-nodes create -f nodes-config.yaml --dir out --save-cluster-profile cluster.json
  %[1]s assisted add-nodes create -f nodes-config.yaml --dir out --cluster-profile cluster.json`),
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "file", "f", "", "nodes-config.yaml: the hosts to add (the installer's format)")
	f.StringVar(&o.Dir, "dir", ".", "Directory that receives node.<arch>.iso (or boot-artifacts/ with --pxe)")
	f.StringVar(&o.BaseISO, "base-iso", "", "Live ISO to start from instead of the release payload's machine-os-images")
	f.BoolVarP(&o.PXE, "pxe", "p", false, "Write PXE artifacts (kernel, initrd with the ignition, rootfs, iPXE script) instead of an ISO")
	f.BoolVar(&o.Checksum, "checksum", false, "Add the sha256 of every artifact to the result (reads each artifact once more)")
	f.StringVar(&o.Compression, "compression", "xz", "Compression of the embedded ignition archive: xz (CRC32, as coreos-installer) or gzip")
	f.StringVar(&o.ClusterProfile, "cluster-profile", "", "Build offline from a cluster profile saved with --save-cluster-profile (no cluster access)")
	f.StringVar(&o.SaveClusterProfile, "save-cluster-profile", "", "Also save what was read from the cluster to FILE (holds the pull secret: mode 0600)")
	o.SingleHost.AddFlags(f)
	o.Registry.AddFlags(f)
	o.Output.AddFlags(f)
	o.Terminal.AddFlags(f)
	env.Kube.AddFlags(f)
	return wire(env, cmd, o)
}

// Validate checks the flags and their combinations, before any I/O (but a
// stat of --base-iso).
func (o *AddNodesCreateOptions) Validate() error {
	fs := o.cmd.Flags()
	if err := o.SingleHost.CheckOrphans(fs); err != nil {
		return err
	}
	single := o.SingleHost.Set(fs)
	switch {
	case o.File != "" && single:
		return errors.New("use either -f nodes-config.yaml or --mac-address (single host), not both")
	case o.File == "" && !single:
		return nodesconfig.ErrNoHosts
	}
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if o.Compression != string(iso.XZ) && o.Compression != string(iso.Gzip) {
		return fmt.Errorf("unknown --compression %q: use xz or gzip", o.Compression)
	}
	if o.ClusterProfile != "" && o.SaveClusterProfile != "" {
		return errors.New("--cluster-profile (offline) and --save-cluster-profile (online) cannot be combined: give one")
	}
	if o.BaseISO != "" {
		if st, err := os.Stat(o.BaseISO); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("--base-iso %s is not a readable file: give the path of a live ISO", o.BaseISO)
		}
	}
	return nil
}

// resolve loads nodes-config (or builds it from the single-host flags), the
// profile, and the cluster clients.
func (o *AddNodesCreateOptions) resolve() error {
	fs := o.cmd.Flags()
	if o.SingleHost.Set(fs) {
		c, err := o.SingleHost.Config(fs)
		if err != nil {
			return o.usage(err)
		}
		o.nodes = c
	} else {
		c, err := nodesconfig.Load(o.File)
		if err != nil {
			return clierr.New(fmt.Errorf("%s: %w", o.File, err), "Fix nodes-config.yaml; nothing was written.", clierr.ExitError)
		}
		o.nodes = c
	}
	if o.ClusterProfile != "" {
		p, err := clusterinfo.LoadProfile(o.ClusterProfile)
		if err != nil {
			return clierr.New(err, "Give --cluster-profile a file saved with --save-cluster-profile.", clierr.ExitError)
		}
		o.profile = p
		return nil
	}
	cfg, err := o.env.Kube.ToRESTConfig()
	if err != nil {
		return clierr.New(fmt.Errorf("kubeconfig: %w", err), "Point --kubeconfig at the cluster, or build offline with --cluster-profile.", clierr.ExitError)
	}
	if o.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	o.dyn, err = dynamic.NewForConfig(cfg)
	return err
}

// Run builds the artifacts and prints the result.
func (o *AddNodesCreateOptions) Run(ctx context.Context) error {
	if err := o.resolve(); err != nil {
		return err
	}
	env := o.env
	errOut := env.Streams.ErrOut
	showSteps := !o.Output.Machine() && !o.Terminal.NoProgress
	opts := nodeimage.Options{
		Nodes: o.nodes, Dir: o.Dir, BaseISO: o.BaseISO, PXE: o.PXE, Checksum: o.Checksum,
		Compression: iso.Compression(o.Compression),
		Kube:        o.kube, Dynamic: o.dyn, Profile: o.profile, SaveProfile: o.SaveClusterProfile,
		Registry: release.Options{
			AuthFile: o.Registry.ConfigFile, CAFile: o.Registry.CAFile,
			PlainHTTP: o.Registry.PlainHTTP, InsecureSkipTLSVerify: o.Registry.InsecureSkipTLSVerify,
			UserAgent: "kubectl-assisted/" + CurrentVersion().Version,
		},
		Warn: func(format string, args ...any) { fmt.Fprintf(errOut, "warning: "+format+"\n", args...) },
	}
	if showSteps {
		opts.Progress = func(format string, args ...any) {
			fmt.Fprintf(errOut, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
		}
	}
	res, err := nodeimage.Create(ctx, opts)
	if err != nil {
		return createError(err)
	}
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, NodeImageResult{APIVersion: ResultAPIVersion, Kind: "NodeImage", Result: *res})
	}
	out := env.Streams.Out
	for _, a := range res.Artifacts {
		line := fmt.Sprintf("%-7s %s (%s)", a.Kind, a.Path, humanBytes(a.Size))
		if a.SHA256 != "" {
			line += " sha256:" + a.SHA256
		}
		fmt.Fprintln(out, line)
	}
	what := "ISO"
	if o.PXE {
		what = "PXE artifacts"
	}
	fmt.Fprintf(out, "Generated the %s for %d host(s) joining cluster %s (OpenShift %s, %s).\n", what, res.Hosts, res.Cluster.Name, res.Cluster.Version, res.Architecture)
	fmt.Fprintf(out, "The %s is valid until %s.\n", what, res.TokenExpiresAt.UTC().Format(time.RFC3339))
	if o.File != "" {
		fmt.Fprintf(out, "Boot the hosts from it, then follow them with: %s assisted add-nodes monitor -f %s\n", env.Caller, filepath.Clean(o.File))
	}
	return nil
}

// trimmed is a helper for flag values read from files.
func trimmed(b []byte) string { return strings.TrimSpace(string(b)) }
