package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
	"github.com/kubectl-assisted/kubectl-assisted/test/synthetic"
)

const wrongRegistryPassword = "WRONG-REGISTRY-PASSWORD-5c1d"

// writeAuths writes a docker/podman auth file with user:pass per host.
func writeAuths(t *testing.T, path string, entries map[string][2]string) {
	t.Helper()
	auths := map[string]any{}
	for host, up := range entries {
		auths[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(up[0] + ":" + up[1]))}
	}
	b, _ := json.Marshal(map[string]any{"auths": auths})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryAuthOrder_AddNodesAndBundleShareIt: add-nodes create (reading
// the release payload through the cluster's mirror) and bundle create
// (pushing) find credentials for an htpasswd-protected docker-registry in the
// same auth files, in the order of --registry-config's help (podman's,
// containers-auth.json(5)), without --registry-config:
//   - $XDG_CONFIG_HOME/containers/auth.json wins over $DOCKER_CONFIG/config.json;
//   - a file without the registry hands over to the next one (per registry);
//   - REGISTRY_AUTH_FILE is the only file read when set.
//
// The cluster's pull secret has no credentials for the registry: they come
// from the local files only.
func TestRegistryAuthOrder_AddNodesAndBundleShareIt(t *testing.T) {
	reg := harness.StartDockerRegistry(t, harness.DockerRegistryOptions{TLS: true, Auth: true})
	oras := harness.RequireTool(t, "oras")
	base := fixtureISO(t, "embed-areas-2023-07.x86_64.iso")
	baseBytes, _ := os.ReadFile(base)
	e := newDay2Env(t, map[string][]byte{"x86_64": baseBytes}, func(o *synthetic.ClusterOptions) {
		o.Mirrors = []synthetic.Mirror{{Source: sourceHost + "/ocp", Mirrors: []string{reg.Host + "/ocp"}}}
	})
	// The payload moves to the authenticated registry: only it serves the mirror.
	refs := []string{strings.Replace(e.release.Ref, sourceHost, e.reg.Host, 1)}
	for _, ref := range e.release.Images {
		refs = append(refs, strings.Replace(ref, sourceHost, e.reg.Host, 1))
	}
	for i, src := range refs {
		repo, _, _ := strings.Cut(strings.TrimPrefix(src, e.reg.Host+"/"), "@")
		dst := reg.Host + "/" + repo + ":copy-" + string(rune('a'+i))
		run(t, oras, append([]string{"cp", "--from-plain-http", src, dst, "--to-ca-file", reg.CAFile, "--to-registry-config", reg.AuthFile}, "-r")...)
	}

	_, recipient := ageKey(t)
	data := assistedData(t, "kubeadmin-pw-not-secret-here")
	nodes := writeFile(t, "nodes-config.yaml", twoHosts)
	right := [2]string{reg.Username, reg.Password}
	wrong := [2]string{reg.Username, wrongRegistryPassword}

	type files struct{ runtime, config, docker, env string }
	try := func(name string, f files) (addNodes, bundle harness.Result) {
		t.Helper()
		d := t.TempDir()
		env := []string{"XDG_RUNTIME_DIR=" + d + "/run", "XDG_CONFIG_HOME=" + d + "/cfg", "DOCKER_CONFIG=" + d + "/docker"}
		if err := os.MkdirAll(d+"/run", 0o700); err != nil {
			t.Fatal(err)
		}
		if f.env != "" {
			env = append(env, "REGISTRY_AUTH_FILE="+f.env)
		}
		p := harness.NewPlugin(t)
		p.Env = env
		placed := map[string]string{d + "/run/containers/auth.json": f.runtime, d + "/cfg/containers/auth.json": f.config, d + "/docker/config.json": f.docker}
		for path, which := range placed {
			switch which {
			case "right":
				writeAuths(t, path, map[string][2]string{reg.Host: right})
			case "wrong":
				writeAuths(t, path, map[string][2]string{reg.Host: wrong})
			case "other":
				writeAuths(t, path, map[string][2]string{"other.example:5000": right})
			}
		}
		addNodes = p.Run(t, "add-nodes", "create", "--kubeconfig", e.kube.Kubeconfig, "-f", nodes,
			"--dir", filepath.Join(d, "out"), "-o", "json", "--ca-file", reg.CAFile)
		bundle = p.Run(t, "bundle", "create", "--to", reg.Ref("assisted/node0", name), "--data-dir", data,
			"--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json", "--ca-file", reg.CAFile)
		for _, r := range []harness.Result{addNodes, bundle} {
			if strings.Contains(r.Combined(), reg.Password) || strings.Contains(r.Combined(), wrongRegistryPassword) {
				t.Fatalf("%s: a registry password shows in the output:\n%s", name, r.Combined())
			}
		}
		return addNodes, bundle
	}
	mustWork := func(name string, a, b harness.Result) {
		t.Helper()
		res := decodeResult(t, a)
		if !strings.HasPrefix(res.BaseISO, reg.Host+"/ocp/art-dev@") {
			t.Fatalf("%s: add-nodes read the base ISO from %q, want the authenticated mirror %s", name, res.BaseISO, reg.Host)
		}
		if b.ExitCode != 0 {
			t.Fatalf("%s: bundle create: exit %d\n%s", name, b.ExitCode, b.Combined())
		}
		parseCreate(t, b.Stdout)
	}
	mustBeRefused := func(name string, a, b harness.Result) {
		t.Helper()
		for what, r := range map[string]harness.Result{"add-nodes create": a, "bundle create": b} {
			if r.ExitCode != 1 || !strings.Contains(strings.ToLower(r.Stderr), "unauthorized") {
				t.Fatalf("%s: %s: exit %d, want 1 with the registry's unauthorized\n%s", name, what, r.ExitCode, r.Combined())
			}
		}
	}

	// podman's config auth.json comes before docker's config.json.
	a, b := try("xdg-config-first", files{config: "right", docker: "wrong"})
	mustWork("xdg-config-first", a, b)
	// The reverse proves the order is applied, not just any file that works.
	a, b = try("xdg-config-first-wrong", files{config: "wrong", docker: "right"})
	mustBeRefused("xdg-config-first-wrong", a, b)
	// The runtime auth.json comes first of all; a file without the registry
	// hands over to the next (credentials are chained per registry).
	a, b = try("chained", files{runtime: "other", config: "other", docker: "right"})
	mustWork("chained", a, b)
	// REGISTRY_AUTH_FILE is the only file read: the right credentials in the
	// default files are not used.
	d := t.TempDir()
	envFile := filepath.Join(d, "env-auth.json")
	writeAuths(t, envFile, map[string][2]string{reg.Host: wrong})
	a, b = try("registry-auth-file", files{config: "right", docker: "right", env: envFile})
	mustBeRefused("registry-auth-file", a, b)
}
