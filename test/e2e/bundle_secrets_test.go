package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func secretValue(t *testing.T, what string) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return what + "-" + hex.EncodeToString(b)
}

// TestBundle_SecretsNeverLeak plants a pull secret (a cluster Secret an
// InfraEnv references), a kubeadmin password (in the data dir) and a database
// password (in --db and in --db-env-file), and checks that none appears in
// stdout, stderr, -o json output, the metadata, the manifest or any blob that
// is not encrypted; and that the encrypted bundle does carry the first two
// (so the check is not vacuous).
func TestBundle_SecretsNeverLeak(t *testing.T) {
	ctx := context.Background()
	kube := harness.SharedKube(t)
	ns := kube.Namespace(t)
	pullSecret := secretValue(t, "pullsecret")
	kubeadmin := secretValue(t, "kubeadmin")
	dbPass := secretValue(t, "dbpass")
	dockerConfig := `{"auths":{"quay.io":{"auth":"` + pullSecret + `"}}}`
	// The Secret's data is base64 in the API: look for that form too.
	secrets := []string{pullSecret, base64.StdEncoding.EncodeToString([]byte(dockerConfig)), kubeadmin, dbPass}

	cs := kube.Clientset(t)
	_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull-secret", Namespace: ns},
		Type:       corev1.SecretTypeDockerConfigJson,
		StringData: map[string]string{".dockerconfigjson": dockerConfig},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	infraEnv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
		"metadata": map[string]any{"name": "myinfraenv", "namespace": ns},
		"spec":     map[string]any{"pullSecretRef": map[string]any{"name": "pull-secret"}},
	}}
	gvr := schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "infraenvs"}
	if _, err := kube.Dynamic(t).Resource(gvr).Namespace(ns).Create(ctx, infraEnv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	p := harness.NewPlugin(t)
	reg := harness.StartInProcessRegistry(t)
	oras := harness.RequireTool(t, "oras")
	key, recipient := ageKey(t)
	data := assistedData(t, kubeadmin)
	kubeconfig := kube.KubeconfigFor(t, harness.AdminUser, ns)
	ref := reg.Ref("assisted/secrets", "v1")

	var outputs []string
	record := func(r harness.Result) harness.Result {
		outputs = append(outputs, r.Stdout, r.Stderr)
		return r
	}
	created := record(p.MustRun(t, "bundle", "create", "--to", ref, "--plain-http", "--data-dir", data,
		"--resources", "cluster", "--kubeconfig", kubeconfig, "-n", ns, "--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json"))
	res := parseCreate(t, created.Stdout)
	// Unencrypted, the local-auth key stays out, and the command says so (the
	// rehearsal against the real service met a silent omission).
	const noKey = "an unencrypted bundle never carries node 0's assisted-servicelocal-auth Secret"
	plain := record(p.MustRun(t, "bundle", "create", "--to", "oci:"+filepath.Join(t.TempDir(), "plain"), "--data-dir", data,
		"--resources", "cluster", "--kubeconfig", kubeconfig, "-n", ns))
	if !strings.Contains(plain.Stderr, noKey) || strings.Contains(created.Stderr, noKey) {
		t.Errorf("local-auth warning: unencrypted stderr %q; encrypted stderr %q", plain.Stderr, created.Stderr)
	}
	record(p.MustRun(t, "bundle", "inspect", ref, "--plain-http", "-o", "json"))
	record(p.MustRun(t, "bundle", "inspect", ref, "--plain-http"))
	record(p.MustRun(t, "bundle", "verify", ref, "--plain-http", "--signer", signerFile(t), "--identity", key, "-o", "json"))

	// The database password, in a URL and in an env file: whatever the command
	// says about them, it never repeats the password.
	envFile := filepath.Join(t.TempDir(), "assisted-service.env")
	if err := os.WriteFile(envFile, []byte("DB_HOST=127.0.0.1\nDB_PORT=1\nDB_USER=admin\nDB_PASS="+dbPass+"\nDB_NAME=installer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dbArgs := range [][]string{{"--db", "postgres://admin:" + dbPass + "@127.0.0.1:1/installer"}, {"--db-env-file", envFile}} {
		record(p.Run(t, append([]string{"bundle", "create", "--to", "oci:" + filepath.Join(t.TempDir(), "db"), "--data-dir", data, "--recipient", recipient, "-o", "json"}, dbArgs...)...))
	}

	// Every blob as stored: the manifest and the metadata are plaintext by
	// design; the layers are age ciphertext.
	manifestRaw := run(t, oras, "manifest", "fetch", "--plain-http", ref)
	blobs := []string{manifestRaw}
	m := parseManifest(t, manifestRaw)
	digests := []string{m.Config.Digest}
	for _, l := range m.Layers {
		digests = append(digests, l.Digest)
	}
	for _, d := range digests {
		blobs = append(blobs, run(t, oras, "blob", "fetch", "--plain-http", "--output", "-", reg.Host+"/assisted/secrets@"+d))
	}
	for i, out := range append(outputs, blobs...) {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("secret %q leaked into output/blob #%d:\n%.400s", s[:10], i, out)
			}
		}
	}

	// Not vacuous: the bundle holds the pull secret and the password, encrypted.
	if len(res.Layers) != 2 {
		t.Fatalf("want files and resources layers, got %+v", res.Layers)
	}
	out := filepath.Join(t.TempDir(), "out")
	p.MustRun(t, "bundle", "extract", ref, "--plain-http", "--signer", signerFile(t), "--identity", key, "--dir", out)
	resYAML, err := os.ReadFile(filepath.Join(out, "resources.yaml"))
	if err != nil || !strings.Contains(string(resYAML), "kind: InfraEnv") || !strings.Contains(string(resYAML), secrets[1]) {
		t.Fatalf("resources.yaml lacks the InfraEnv or its Secret (%v):\n%s", err, resYAML)
	}
	pw, err := os.ReadFile(filepath.Join(out, "files", bundleClusterID, "kubeadmin-password"))
	if err != nil || string(pw) != kubeadmin {
		t.Fatalf("kubeadmin-password not restored: %v", err)
	}
}
