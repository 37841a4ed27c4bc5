package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// writeReach writes, for a kept demo, how to reach what keeps running.
func (d *demo) writeReach(path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "The components keep running (KEEP=1). Stop them and remove %s with:\n  make demo-clean\n\n", d.opts.state)
	if d.plugin != nil {
		fmt.Fprintf(&b, "Use the plugin that ran:\n  export PATH=%s:$PATH\n", filepath.Dir(harness.PluginBinary(d.r)))
	}
	if d.kube != nil {
		fmt.Fprintf(&b, "Cluster 0 (kube-apiserver %s):\n  export KUBECONFIG=%s\n  kubectl get clusterdeployments,agentclusterinstalls,infraenvs,nmstateconfigs,agents -A\n", d.kube.Server, d.kubeconfig)
		fmt.Fprintf(&b, "  kubectl get configmaps -n %s -l kubectl-assisted.io/role=restore-receipt -o yaml\n", serviceNamespace)
	}
	if d.node0DB != "" {
		fmt.Fprintf(&b, "Databases (assisted-service's %q on two servers):\n  psql '%s'   # node 0\n", databaseName, d.node0DB)
	}
	if d.cluster0DB != "" {
		if u, err := url.Parse(d.cluster0DB); err == nil && d.cluster != nil {
			// The Job's database: served by the operator's postgres container,
			// with the postgres Secret's password.
			u.User = url.User(u.User.Username())
			fmt.Fprintf(&b, "  psql '%s'   # cluster 0 (password: kubectl -n %s get secret postgres -o jsonpath='{.data.db\\.password}' | base64 -d)\n", u, serviceNamespace)
		} else {
			fmt.Fprintf(&b, "  psql '%s'   # cluster 0\n", d.cluster0DB)
		}
	}
	if d.registry != nil {
		fmt.Fprintf(&b, "Registry %s:\n  kubectl assisted bundle inspect %s %s\n", d.registry.Host, d.ref(), shellQuote(d.registryArgs()))
		if d.registry.AuthFile != "" {
			fmt.Fprintf(&b, "  (credentials in %s, CA %s)\n", d.registry.AuthFile, d.registry.CAFile)
		}
	}
	if d.mirror != nil {
		fmt.Fprintf(&b, "Release mirror: http://%s (the day-2 release payload)\n", d.mirror.Host)
	}
	if d.node0.dataDir != "" {
		fmt.Fprintf(&b, "Files:\n  node 0 file storage  %s\n  node 0 ABI manifests %s\n  cluster 0 storage    %s\n", d.node0.dataDir, d.node0.manifestsDir, d.cluster0Data)
	}
	if _, err := os.Stat(d.path("keys", "bundle.agekey")); err == nil {
		fmt.Fprintf(&b, "  bundle identity      %s\n", d.path("keys", "bundle.agekey"))
	}
	if d.sum.ISO.Exists {
		fmt.Fprintf(&b, "  day-2 ISO            %s\n", d.sum.ISO.Path)
	}
	fmt.Fprintf(&b, "The demo's log: %s\n", filepath.Join(d.opts.state, logFile))
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
