package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// olderABIEnv writes node 0's assisted-service env file as the older
// agent-based installer rendered it (openshift/installer commit ecc6a712,
// data/data/agent/files/usr/local/share/assisted-service/
// assisted-service.env.template): AUTH_TYPE=none, the DB_* variables,
// INFRA_ENV_ID, EC_PUBLIC_KEY_PEM, EC_PRIVATE_KEY_PEM and AGENT_AUTH_TOKEN.
// The keys are base64 PEM, one line each, as the installer encodes them
// (pkg/asset/agent/gencrypto/authconfig.go: "Encode to Base64"); the token is
// ES256 {infra_env_id: INFRA_ENV_ID} (the same file's localJWTForKey). It
// returns the file, the private key and the token.
func olderABIEnv(t *testing.T, dbURL, infraEnvID string) (string, *ecdsa.PrivateKey, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(key)
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PUBLIC KEY", Bytes: pubDER})
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	tok := localJWT(t, key, "infra_env_id", infraEnvID)
	env := strings.Join([]string{
		"AUTH_TYPE=none",
		"DB_HOST=" + cfg.Host, fmt.Sprintf("DB_PORT=%d", cfg.Port), "DB_USER=" + cfg.User, "DB_PASS=" + plantedDBPassword, "DB_NAME=" + cfg.Database,
		"DEPLOY_TARGET=onprem", "INSTALL_INVOKER=agent-installer", "STORAGE=filesystem",
		"INFRA_ENV_ID=" + infraEnvID,
		"EC_PUBLIC_KEY_PEM=" + base64.StdEncoding.EncodeToString(pubPEM),
		"EC_PRIVATE_KEY_PEM=" + base64.StdEncoding.EncodeToString(privPEM),
		"AGENT_AUTH_TOKEN=" + tok,
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "assisted-service.env")
	if err := os.WriteFile(path, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, key, tok
}

// An older agent-based node 0 (AUTH_TYPE=none, the key pair in the service's
// env file): `bundle create --db-env-file` carries the key pair, encrypted,
// with the install manifests or alone; the restore makes it cluster 0's
// local-auth key, so cluster 0 (AUTH_TYPE=local) accepts the AGENT_AUTH_TOKEN
// node 0's agents hold; an unencrypted bundle never carries it. No key, token
// or password appears in any output, and the key never becomes an object in
// the CRs' namespace.
func TestHandover_OlderABIEnvKeyCarried(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	s := assisted.Scenarios()[0]
	src := harness.NewDatabase(t)
	assisted.LoadSchema(t, src.URL)
	if err := assisted.InsertScenario(context.Background(), src.Connect(t), s); err != nil {
		t.Fatal(err)
	}
	var infraEnvID string
	if err := src.Connect(t).QueryRow(context.Background(), `SELECT id FROM infra_envs`).Scan(&infraEnvID); err != nil {
		t.Fatal(err)
	}
	envFile, key, agentToken := olderABIEnv(t, src.URL, infraEnvID)
	der, _ := x509.MarshalECPrivateKey(key)
	secrets := []string{base64.StdEncoding.EncodeToString(der)[:24], agentToken, plantedDBPassword}
	noLeak := func(what string, r harness.Result) {
		t.Helper()
		for _, sec := range secrets {
			if strings.Contains(r.Combined(), sec) {
				t.Fatalf("%s: a key, token or password is in the output", what)
			}
		}
	}
	manifests := writeManifests(t, s, nil)

	restoreInto := func(t *testing.T, ref string) (*corev1.Secret, restoreResultJSON) {
		t.Helper()
		// The service's namespace (-n) and the CRs' (mapped) are apart, so
		// that a key applied as an object would show.
		ns, crNS := k.Namespace(t), k.Namespace(t)
		target := emptyDatabase(t)
		r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--identity", identity, "--db", withPassword(t, target.URL, plantedDBPassword),
			"--data-dir", filepath.Join(t.TempDir(), "data"), "--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns,
			"--namespace-mapping", "cluster0="+crNS, "-o", "json")
		if r.ExitCode != 0 {
			t.Fatalf("restore: exit %d\n%s", r.ExitCode, r.Combined())
		}
		noLeak("restore", r)
		sec, err := k.Clientset(t).CoreV1().Secrets(ns).Get(context.Background(), "assisted-servicelocal-auth", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Never applied as an object: the CRs' namespace has no such Secret.
		if _, err := k.Clientset(t).CoreV1().Secrets(crNS).Get(context.Background(), "assisted-servicelocal-auth", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("node 0's key was applied as a Secret in the CRs' namespace (%v)", err)
		}
		// The restored infra-env row is what cluster 0's local authenticator
		// looks the claim up in (pkg/auth/local_authenticator.go infraEnvExists).
		var n int
		if err := target.Connect(t).QueryRow(context.Background(), `SELECT count(*) FROM infra_envs WHERE id = $1`, infraEnvID).Scan(&n); err != nil || n != 1 {
			t.Fatalf("infra-env %s restored %d times (%v)", infraEnvID, n, err)
		}
		return sec, parseRestore(t, r)
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"with the install manifests", []string{"--manifests-dir", manifests}},
		{"the key alone", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
			args := append([]string{"bundle", "create", "--to", ref, "--db-env-file", envFile, "--data-dir", assistedData(t, plantedKubeadmin),
				"--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json"}, tc.args...)
			c := p.Run(t, args...)
			if c.ExitCode != 0 {
				t.Fatalf("bundle create: exit %d\n%s", c.ExitCode, c.Combined())
			}
			noLeak("bundle create", c)
			if !strings.Contains(c.Stderr, "carries node 0's token key from "+envFile) {
				t.Errorf("bundle create does not say the key is carried:\n%s", c.Stderr)
			}
			sec, res := restoreInto(t, ref)
			if res.ResourcesFrom != "recreated" {
				t.Errorf("resources from %q, want re-created (a node 0 without API)", res.ResourcesFrom)
			}
			if got := acceptedBy(t, sec.Data["ec-public-key.pem"], agentToken); got != "infra_env_id="+infraEnvID {
				t.Fatalf("cluster 0 refuses node 0's AGENT_AUTH_TOKEN (%q)", got)
			}
			got, err := x509.ParseECPrivateKey(mustPEM(t, sec.Data["ec-private-key.pem"]))
			if err != nil || !got.Equal(key) {
				t.Fatalf("cluster 0's private key is not node 0's (%v)", err)
			}
		})
	}

	t.Run("unencrypted: never carried", func(t *testing.T) {
		ref := "oci:" + filepath.Join(t.TempDir(), "layout") + ":v1"
		c := p.Run(t, "bundle", "create", "--to", ref, "--db-env-file", envFile, "--data-dir", assistedData(t, plantedKubeadmin), "--manifests-dir", manifests, "--no-encryption", "--signing-key", signingKeyFile(t))
		if c.ExitCode != 0 {
			t.Fatalf("bundle create: exit %d\n%s", c.ExitCode, c.Combined())
		}
		noLeak("bundle create", c)
		if !strings.Contains(c.Stderr, "an unencrypted bundle never carries it") {
			t.Errorf("no warning about the key left out:\n%s", c.Stderr)
		}
		ns := k.Namespace(t)
		target := emptyDatabase(t)
		r := p.Run(t, "restore", ref, "--signer", signerFile(t), "--db", withPassword(t, target.URL, plantedDBPassword), "--skip-files",
			"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns, "--namespace-mapping", "cluster0="+ns)
		if r.ExitCode != 0 {
			t.Fatalf("restore: exit %d\n%s", r.ExitCode, r.Combined())
		}
		sec, err := k.Clientset(t).CoreV1().Secrets(ns).Get(context.Background(), "assisted-servicelocal-auth", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := x509.ParseECPrivateKey(mustPEM(t, sec.Data["ec-private-key.pem"])); err != nil || got.Equal(key) {
			t.Fatalf("an unencrypted bundle carried node 0's key (%v)", err)
		}
	})

	t.Run("a pair that does not match: refused, nothing written", func(t *testing.T) {
		other, _, _ := olderABIEnv(t, src.URL, infraEnvID)
		b, _ := os.ReadFile(envFile)
		ob, _ := os.ReadFile(other)
		pubLine := func(b []byte) string {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "EC_PUBLIC_KEY_PEM=") {
					return l
				}
			}
			return ""
		}
		bad := filepath.Join(t.TempDir(), "assisted-service.env")
		if err := os.WriteFile(bad, []byte(strings.Replace(string(b), pubLine(b), pubLine(ob), 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "layout")
		c := p.Run(t, "bundle", "create", "--to", "oci:"+dir+":v1", "--db-env-file", bad, "--recipient", recipient)
		if c.ExitCode != 2 || !strings.Contains(c.Stderr, "EC_PRIVATE_KEY_PEM and EC_PUBLIC_KEY_PEM") || !strings.Contains(c.Stderr, "does not belong") {
			t.Fatalf("exit %d, want 2 naming the variables\n%s", c.ExitCode, c.Combined())
		}
		noLeak("refusal", c)
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the refused run wrote %s (%v)", dir, err)
		}
	})
}

func mustPEM(t *testing.T, b []byte) []byte {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("not PEM")
	}
	return blk.Bytes
}
