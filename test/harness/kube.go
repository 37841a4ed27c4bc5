package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TokenUser is an identity the test kube-apiserver accepts by bearer token.
type TokenUser struct {
	Name   string
	Groups []string
	Token  string
}

// Well-known identities of the shared test API server.
const (
	AdminUser        = "kat-admin" // group system:masters
	NobodyUser       = "kat-nobody"
	BootstrapperUser = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
)

// Kube is a running kube-apiserver + etcd with the CRDs installed.
type Kube struct {
	// Kubeconfig is a kubeconfig file for AdminUser.
	Kubeconfig string
	// Config is the admin rest.Config.
	Config *rest.Config
	// Server is the https URL of the API server.
	Server string
	// Users are the identities in the token file, by name.
	Users map[string]TokenUser
	Dir   string
	caPEM []byte
	etcd  *Process
	api   *Process
}

var (
	sharedKubeOnce sync.Once
	sharedKube     *Kube
	sharedKubeErr  error
)

// SharedKube returns the test process's kube-apiserver, starting it on first use.
// It lives until Main returns; tests isolate themselves with Namespace.
func SharedKube(t testing.TB) *Kube {
	t.Helper()
	sharedKubeOnce.Do(func() {
		sharedKube, sharedKubeErr = startKube()
		if sharedKube != nil {
			atExit(sharedKube.Stop)
		}
	})
	if sharedKubeErr != nil {
		Unavailable(t, "test Kubernetes API server", sharedKubeErr)
	}
	return sharedKube
}

// NodeUserNames are the node identities (system:node:<name>) the shared API
// server knows, for CSR tests.
var NodeUserNames = []string{
	"master-0", "master-1", "master-2", "worker-0", "worker-1", "worker-2", "worker-3",
	"extra-worker-0", "extra-worker-1", "extra-worker-2", "extra-worker-3", "attacker",
}

func defaultUsers() []TokenUser {
	users := []TokenUser{
		{Name: AdminUser, Groups: []string{"system:masters"}},
		{Name: NobodyUser, Groups: []string{"system:authenticated"}},
		{Name: BootstrapperUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:openshift-machine-config-operator", "system:authenticated"}},
	}
	for _, n := range NodeUserNames {
		users = append(users, TokenUser{Name: "system:node:" + n, Groups: []string{"system:nodes", "system:authenticated"}})
	}
	for i := range users {
		users[i].Token = "tok-" + randHex(16)
	}
	return users
}

// startKube starts etcd and kube-apiserver and installs the CRDs. An error names
// the component that failed and why; whatever did start is stopped again.
func startKube() (*Kube, error) { return startKubeWith(kubeOptions{}) }

// kubeOptions change where and how kube-apiserver serves.
type kubeOptions struct {
	// BindAddress is the address it listens on and advertises (127.0.0.1).
	BindAddress string
	// ServiceRange is the Service cluster IP range (10.0.0.0/24).
	ServiceRange string
	// ExtraArgs are appended to its command line.
	ExtraArgs []string
	// Users are extra token users.
	Users []TokenUser
}

func startKubeWith(opts kubeOptions) (*Kube, error) {
	apiBin, err := Tool("kube-apiserver")
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver binary: %w", err)
	}
	etcdBin, err := Tool("etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd binary: %w", err)
	}
	dir, err := os.MkdirTemp("", "kat-kube-")
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver data directory: %w", err)
	}
	k := &Kube{Dir: dir, Users: map[string]TokenUser{}}
	if opts.BindAddress == "" {
		opts.BindAddress = "127.0.0.1"
	}
	if opts.ServiceRange == "" {
		opts.ServiceRange = "10.0.0.0/24"
	}
	if err := k.start(apiBin, etcdBin, opts); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

func (k *Kube) start(apiBin, etcdBin string, opts kubeOptions) error {
	dir := k.Dir
	var ports [3]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return fmt.Errorf("free port for etcd/kube-apiserver: %w", err)
		}
		ports[i] = p
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	var err error
	k.etcd, err = StartProcess("etcd", exec.Command(etcdBin,
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", peerPort),
		"--unsafe-no-fsync", "--log-level", "error", "--quota-backend-bytes", "4294967296"))
	if err != nil {
		return fmt.Errorf("etcd (%s): %w", etcdBin, err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("kube-apiserver service-account key: %w", err)
	}
	saKeyFile := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(saKeyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return fmt.Errorf("kube-apiserver service-account key: %w", err)
	}
	var tokens bytes.Buffer
	for _, u := range append(defaultUsers(), opts.Users...) {
		if u.Token == "" {
			u.Token = "tok-" + randHex(16)
		}
		k.Users[u.Name] = u
		fmt.Fprintf(&tokens, "%s,%s,%s,\"%s\"\n", u.Token, u.Name, u.Name, strings.Join(u.Groups, ","))
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, tokens.Bytes(), 0o600); err != nil {
		return fmt.Errorf("kube-apiserver token file: %w", err)
	}
	certDir := filepath.Join(dir, "certs")
	args := []string{
		"--etcd-servers", etcdURL,
		"--bind-address", opts.BindAddress, "--advertise-address", opts.BindAddress,
		"--secure-port", fmt.Sprint(apiPort), "--cert-dir", certDir,
		"--service-cluster-ip-range", opts.ServiceRange,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saKeyFile,
		"--service-account-signing-key-file", saKeyFile,
		"--token-auth-file", tokenFile,
		"--authorization-mode", "RBAC",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=0"}
	k.api, err = StartProcess("kube-apiserver", exec.Command(apiBin, append(args, opts.ExtraArgs...)...))
	if err != nil {
		return fmt.Errorf("kube-apiserver (%s): %w", apiBin, err)
	}
	k.Server = fmt.Sprintf("https://%s:%d", opts.BindAddress, apiPort)
	// The serving certificate is self-signed into cert-dir; trust exactly it.
	caFile := filepath.Join(certDir, "apiserver.crt")
	// kube-apiserver waits for etcd; an etcd that died is the real cause.
	err = waitForAll([]*Process{k.etcd, k.api}, 90*time.Second, func() error {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		k.caPEM = b
		cfg := k.restConfig(k.Users[AdminUser].Token)
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("readyz: %v %s", err, body)
		}
		// RBAC bootstrap roles must exist before tests rely on authorization.
		_, err = cs.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("test API server (etcd %s, kube-apiserver %s) did not become ready: %w", etcdBin, apiBin, err)
	}
	k.Config = k.restConfig(k.Users[AdminUser].Token)
	k.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := k.WriteKubeconfig(k.Kubeconfig, AdminUser, "default"); err != nil {
		return fmt.Errorf("kubeconfig for the test API server: %w", err)
	}
	if err := k.installCRDs(); err != nil {
		return fmt.Errorf("install CRDs into the test API server: %w", err)
	}
	return nil
}

func (k *Kube) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            k.Server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: k.caPEM},
		QPS:             200,
		Burst:           400,
	}
}

// ConfigFor is a rest.Config acting as the named token user.
func (k *Kube) ConfigFor(user string) *rest.Config {
	u, ok := k.Users[user]
	if !ok {
		panic("harness: unknown token user " + user)
	}
	return k.restConfig(u.Token)
}

// WriteKubeconfig writes a kubeconfig for the named token user with namespace ns.
func (k *Kube) WriteKubeconfig(path, user, ns string) error {
	u, ok := k.Users[user]
	if !ok {
		return fmt.Errorf("unknown token user %q", user)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: k.Server, CertificateAuthorityData: k.caPEM}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: u.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "user", Namespace: ns}
	cfg.CurrentContext = "test"
	return clientcmd.WriteToFile(*cfg, path)
}

// KubeconfigFor writes a kubeconfig for user into t's temp dir and returns its path.
func (k *Kube) KubeconfigFor(t testing.TB, user, ns string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := k.WriteKubeconfig(p, user, ns); err != nil {
		t.Fatal(err)
	}
	return p
}

// Dynamic is an admin dynamic client.
func (k *Kube) Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Clientset is an admin typed client.
func (k *Kube) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Namespace creates a fresh namespace for t and deletes it when t ends (no
// controller-manager runs, so deletion only marks it; names never repeat).
func (k *Kube) Namespace(t testing.TB) string {
	t.Helper()
	name := "kat-" + randHex(4)
	cs := k.Clientset(t)
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}
	if _, err := k.Dynamic(t).Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).
		Create(context.Background(), &unstructured.Unstructured{Object: ns}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// Stop stops kube-apiserver and etcd and removes their data. It is safe on a
// nil or half-started Kube.
func (k *Kube) Stop() {
	if k == nil {
		return
	}
	if k.api != nil {
		k.api.Stop(10 * time.Second)
	}
	if k.etcd != nil {
		k.etcd.Stop(10 * time.Second)
	}
	if k.Dir != "" {
		_ = os.RemoveAll(k.Dir)
	}
}

// CRDFiles lists the CRDs the harness installs. The assisted-service, Hive
// extension and metal3 kinds come from ../shared/crds (the real upstream files)
// when that directory has any, else from the project's own definitions in
// test/harness/crds together with the Hive CRDs test/tools/install.sh
// generated with controller-gen. OpenShift's config CRDs always come from the
// tool cache (extracted from github.com/openshift/api).
func CRDFiles() ([]string, error) {
	ocpDir := filepath.Join(CacheDir(), "crds", "openshift")
	ocp, _ := filepath.Glob(filepath.Join(ocpDir, "*.yaml"))
	if len(ocp) < 7 {
		return nil, fmt.Errorf("OpenShift config CRDs missing in %s (found %d of 7): run make tools", ocpDir, len(ocp))
	}
	files, err := SharedCRDFiles()
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if files, err = OwnCRDFiles(); err != nil {
			return nil, err
		}
	}
	files = append(files, ocp...)
	sort.Strings(files)
	return files, nil
}

// SharedCRDFiles are the real upstream CRDs in ../shared/crds; none when the
// directory is absent.
func SharedCRDFiles() ([]string, error) {
	return filepath.Glob(filepath.Join(SharedDir(), "crds", "*.yaml"))
}

// OwnCRDFiles are the CRDs the repository provides without ../shared: its own
// definitions (test/harness/crds) and the Hive CRDs generated by make tools.
func OwnCRDFiles() ([]string, error) {
	own, _ := filepath.Glob(filepath.Join(RepoRoot(), "test", "harness", "crds", "*.yaml"))
	if len(own) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", filepath.Join(RepoRoot(), "test", "harness", "crds"))
	}
	hiveDir := filepath.Join(CacheDir(), "crds", "hive")
	hive, _ := filepath.Glob(filepath.Join(hiveDir, "*.yaml"))
	if len(hive) < 2 {
		return nil, fmt.Errorf("Hive CRDs missing in %s (found %d of 2): run make tools", hiveDir, len(hive))
	}
	return append(own, hive...), nil
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func (k *Kube) installCRDs() error {
	files, err := CRDFiles()
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var names []string
	for _, f := range files {
		objs, err := ReadObjects(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			if _, err := dc.Resource(crdGVR).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create CRD %s from %s: %w", o.GetName(), filepath.Base(f), err)
			}
			names = append(names, o.GetName())
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range names {
		for {
			o, err := dc.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err == nil && crdEstablished(o) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established: %v", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Discovery and the dynamic client need a moment to see new resources.
	time.Sleep(500 * time.Millisecond)
	return nil
}

func crdEstablished(o *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// ReadObjects decodes every YAML document of a file into unstructured objects.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 64*1024)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}
