package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-assisted/kubectl-assisted/day2/iso/isofixture"
)

// TestBringUp_WithoutShared brings up everything the suites stand on with
// ../shared hidden: a kube-apiserver with the repository's own and generated
// CRDs (validating a real schema violation), the own assisted-service DDL in
// a fresh database, the own example CRs, and a live ISO built with xorriso.
func TestBringUp_WithoutShared(t *testing.T) {
	t.Setenv("KUBECTL_ASSISTED_SHARED", filepath.Join(t.TempDir(), "no-such-shared"))
	outside := filepath.Dir(RepoRoot())

	// CRDs: none of the files may come from outside the repository and the
	// tool cache.
	files, err := CRDFiles()
	if err != nil {
		Unavailable(t, "CRDs without ../shared", err)
	}
	for _, f := range files {
		if !strings.HasPrefix(f, RepoRoot()+string(filepath.Separator)) && !strings.HasPrefix(f, CacheDir()+string(filepath.Separator)) {
			t.Fatalf("CRD file %s is outside the repository and the tool cache", f)
		}
	}
	k, err := startKube()
	if err != nil {
		Unavailable(t, "test Kubernetes API server", err)
	}
	defer k.Stop()
	dc := k.Dynamic(t)
	ns := k.Namespace(t)
	objs, err := ReadObjects(filepath.Join(ExampleCRsDir(), "agentClusterInstall.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ExampleCRsDir(), RepoRoot()) {
		t.Fatalf("example CRs from %s", ExampleCRsDir())
	}
	aci := schema.GroupVersionResource{Group: "extensions.hive.openshift.io", Version: "v1beta1", Resource: "agentclusterinstalls"}
	good := objs[0]
	good.SetNamespace(ns)
	ctx := context.Background()
	if _, err := dc.Resource(aci).Namespace(ns).Create(ctx, good, metav1.CreateOptions{}); err != nil {
		t.Fatalf("own example AgentClusterInstall rejected by the own CRD: %v", err)
	}
	bad := good.DeepCopy()
	bad.SetName("bad")
	_ = unstructured.SetNestedField(bad.Object, "three", "spec", "provisionRequirements", "controlPlaneAgents")
	if _, err := dc.Resource(aci).Namespace(ns).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("schema violation accepted by the own CRD: err = %v", err)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "hive.openshift.io", Version: "v1", Resource: "clusterdeployments"},
		{Group: "hive.openshift.io", Version: "v1", Resource: "clusterimagesets"},
		{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agents"},
		{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "infraenvs"},
		{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"},
		{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"},
	} {
		if _, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			t.Fatalf("list %s: %v", gvr.Resource, err)
		}
	}

	// Schema: the own DDL, loaded by psql into a fresh database.
	if p := AssistedSchemaPath(); p != OwnAssistedSchemaPath() || strings.HasPrefix(p, outside+"/shared") {
		t.Fatalf("schema from %s, want the own DDL", p)
	}
	db := NewDatabase(t)
	LoadSQLFile(t, db.URL, AssistedSchemaPath())
	var n int
	if err := db.Connect(t).QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil || n != 12 {
		t.Fatalf("own schema: %d tables, err %v", n, err)
	}

	// A live ISO like a coreos-installer fixture, built here.
	iso := LiveISO(t, "embed-areas-2023-07.x86_64.iso")
	if filepath.Base(iso) != string(isofixture.IgnInfoKargsJSONPadEnd)+".iso" {
		t.Fatalf("live ISO %s is not the synthetic one", iso)
	}
	out, err := exec.Command("xorriso", "-indev", iso, "-find", "/coreos", "-type", "f").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("igninfo.json")) || !bytes.Contains(out, []byte("kargs.json")) {
		t.Fatalf("xorriso on the synthetic ISO: %v\n%s", err, out)
	}
}

// TestBareClone_NeedsNothingOutside copies the repository's tracked files into
// a directory with no siblings and runs TestBringUp_WithoutShared there, with
// CI=true so that a missing component fails instead of skipping.
func TestBareClone_NeedsNothingOutside(t *testing.T) {
	if os.Getenv("KAT_INSIDE_BARE_CLONE") != "" {
		return // already the copy: TestBringUp_WithoutShared runs there
	}
	git, err := exec.LookPath("git")
	if err != nil {
		Unavailable(t, "git", err)
	}
	root := RepoRoot()
	ls, err := exec.Command(git, "-C", root, "ls-files", "-z").Output()
	if err != nil {
		Unavailable(t, "git ls-files (the repository is not a git checkout)", err)
	}
	parent := t.TempDir()
	clone := filepath.Join(parent, "kubectl-assisted")
	copied := 0
	for _, rel := range strings.Split(strings.TrimRight(string(ls), "\x00"), "\x00") {
		if rel == "" {
			continue
		}
		src := filepath.Join(root, rel)
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(clone, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(src)
			if err := os.Symlink(target, dst); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		copied++
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Fatalf("the clone's parent has %d entries, want only the clone", len(entries))
	}
	cmd := exec.Command("go", "test", "-count=1", "-run", "^(TestBringUp_WithoutShared|TestOwnCRDs_CoverEveryKindAndAreConsistent|TestOwnAssistedSchema_Loads|TestOwnExamples_CoverSharedOnesAndDecode)$", "-v", "./harness")
	cmd.Dir = filepath.Join(clone, "test")
	cmd.Env = append(os.Environ(), "CI=true", "KAT_INSIDE_BARE_CLONE=1",
		"KUBECTL_ASSISTED_SHARED="+filepath.Join(parent, "shared"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a bare copy of the repository (%d files, %s):\n%s", copied, clone, out)
	}
	for _, want := range []string{"--- PASS: TestBringUp_WithoutShared", "--- PASS: TestOwnAssistedSchema_Loads"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Fatalf("bare copy: no %q in\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("--- SKIP")) {
		t.Fatalf("bare copy skipped tests:\n%s", out)
	}
}
