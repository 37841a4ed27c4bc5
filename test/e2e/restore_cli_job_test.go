package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestRestoreCLI_AsTheRestoreJob runs the restore exactly as the in-cluster
// Job of restore/job would: its container's arguments (--db-from-env,
// --data-dir, -n, the extra ones), its environment resolved from the
// operator's postgres Secret, and the permissions of its service account
// (a token of that account, bound by the Job's ClusterRole). No kubelet runs
// here, so the test runs the container's command line itself, with the
// mounted paths moved into a temporary directory.
func TestRestoreCLI_AsTheRestoreJob(t *testing.T) {
	k := harness.SharedKube(t)
	p := harness.NewPlugin(t)
	reg := harness.StartInProcessRegistry(t)
	ns := k.Namespace(t)
	id := ns
	identity, recipient := ageKey(t)
	digest := makeBundle(t, reg.Ref("assisted/job", "v1"), oci.RegistryOptions{PlainHTTP: true}, recipient, bundle.CreateOptions{
		Database: pgDumpSource{node0Database(t, assisted.Scale{Clusters: 1, Hosts: 2, Events: 10, InventoryBytes: 200}).URL},
		Files:    &bundle.FilesOptions{Dir: assistedData(t, plantedKubeadmin)}, Resources: exportedObjects(node0Export(t, id))})
	target := emptyDatabase(t)
	postgresSecret(t, k, ns, target) // the operator's, as migrate pre-creates it
	idText, err := os.ReadFile(identity)
	if err != nil {
		t.Fatal(err)
	}
	_, signerFile, _ := node0Signer(t)
	signerPEM, err := os.ReadFile(signerFile)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := job.Objects(job.Options{
		Signer:    string(signerPEM),
		Namespace: ns, Ref: reg.Host + "/assisted/job@" + digest, Digest: digest, RestoreImage: "quay.io/example/kubectl-assisted:test",
		DatabaseSize: resource.MustParse("1Gi"), FilesystemSize: resource.MustParse("1Gi"), Identity: string(idText),
		ExtraArgs: []string{"--service-url", "https://assisted.cluster0.example.com", "--namespace-mapping", "spoke-cluster=" + ns + ",demo=" + ns + ",agents=" + ns, "--plain-http"},
	})
	if err != nil {
		t.Fatal(err)
	}

	// Create the service account and its RBAC for real; take the Job's container.
	cs := k.Clientset(t)
	ctx := context.Background()
	var container corev1.Container
	var idSecret *corev1.Secret
	for _, o := range objs {
		var err error
		switch v := o.(type) {
		case *corev1.Secret:
			if v.Name == job.IdentitySecret {
				idSecret = v
			}
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = cs.RbacV1().ClusterRoles().Create(ctx, v, metav1.CreateOptions{})
			t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), v.Name, metav1.DeleteOptions{}) })
		case *rbacv1.ClusterRoleBinding:
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, v, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), v.Name, metav1.DeleteOptions{})
			})
		case *batchv1.Job:
			container = v.Spec.Template.Spec.Containers[0]
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if container.Name != "restore" {
		t.Fatalf("no restore container among the Job objects")
	}

	// The service account's kubeconfig stands in for the in-cluster config.
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, job.ServiceAccount, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Token = tok.Status.Token
	}
	saKubeconfig := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, saKubeconfig); err != nil {
		t.Fatal(err)
	}

	// Mounts: the identity Secret and the PVC, under a temporary root.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "identity"), 0o700); err != nil {
		t.Fatal(err)
	}
	if idSecret == nil || string(idSecret.Data[job.IdentityKey]) != string(idText) {
		t.Fatalf("the identity Secret does not hold the identity")
	}
	for key, v := range idSecret.Data { // the Secret volume: one file per key
		if err := os.WriteFile(filepath.Join(root, "identity", key), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(strings.Join(container.Args, " "), "--signer /var/run/kubectl-assisted/identity/signer.pub") {
		t.Fatalf("the Job does not check the signature: %v", container.Args)
	}
	dataDir := filepath.Join(root, "data")
	var args []string
	for _, a := range container.Args {
		switch {
		case a == "/data":
			a = dataDir
		case strings.HasPrefix(a, "/var/run/kubectl-assisted/"):
			a = filepath.Join(root, strings.TrimPrefix(a, "/var/run/kubectl-assisted/"))
		}
		args = append(args, a)
	}
	pgSecret, err := cs.CoreV1().Secrets(ns).Get(ctx, "postgres", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pj := *p
	pj.Env = []string{"KUBECONFIG=" + saKubeconfig}
	for _, e := range container.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			v = string(pgSecret.Data[e.ValueFrom.SecretKeyRef.Key])
		}
		pj.Env = append(pj.Env, e.Name+"="+v)
	}

	r := pj.Run(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("the Job's command line: %v\nexit %d\n%s", args, r.ExitCode, r.Combined())
	}
	rec, err := journal.ReadReceipt(ctx, cs, ns, digest)
	if err != nil || strings.Join(rec.Phases, ",") != "database,files,auth,resources" {
		t.Fatalf("receipt %+v, %v", rec, err)
	}
	if objs := bundleObjects(t, k, ns, id); len(objs) != 10 {
		t.Errorf("objects restored with the service account's permissions: %v", keys(objs))
	}
	if strings.Contains(r.Combined(), plantedDBPassword) || strings.Contains(r.Combined(), tok.Status.Token) {
		t.Error("a secret leaked into the output")
	}
}
