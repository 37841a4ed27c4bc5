package job

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func validOptions() Options {
	return Options{
		Namespace:      "multicluster-engine",
		Ref:            "registry.example.com/assisted/bundle@sha256:" + strings.Repeat("ab", 32),
		Digest:         "sha256:" + strings.Repeat("ab", 32),
		RestoreImage:   "quay.io/example/kubectl-assisted:v1",
		DatabaseSize:   resource.MustParse("10Gi"),
		FilesystemSize: resource.MustParse("20Gi"),
		Identity:       "AGE-SECRET-KEY-1TEST",
		Signer:         "-----BEGIN PUBLIC KEY-----\nTEST\n-----END PUBLIC KEY-----\n",
		RegistryAuth:   []byte(`{"auths":{}}`),
	}
}

func TestObjects(t *testing.T) {
	objs, err := Objects(validOptions())
	if err != nil {
		t.Fatal(err)
	}
	var job *batchv1.Job
	pvcs := map[string]string{}
	for _, o := range objs {
		switch v := o.(type) {
		case *batchv1.Job:
			job = v
		case *corev1.PersistentVolumeClaim:
			q := v.Spec.Resources.Requests[corev1.ResourceStorage]
			pvcs[v.Name] = q.String()
		}
	}
	if pvcs[DatabasePVC] != "10Gi" || pvcs[FilesystemPVC] != "20Gi" {
		t.Fatalf("PVC sizes = %v", pvcs)
	}
	if job == nil || job.Name != "kubectl-assisted-restore-abababababab" {
		t.Fatalf("job = %v", job)
	}
	c := job.Spec.Template.Spec.Containers[0]
	cmdline := strings.Join(append(c.Command, c.Args...), " ")
	if !strings.Contains(cmdline, "restore "+validOptions().Ref) || strings.Contains(cmdline, "AGE-SECRET-KEY") {
		t.Fatalf("command line %q", cmdline)
	}
	for _, e := range c.Env {
		if e.Name == "DB_PASS" && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Key != "db.password") {
			t.Fatalf("DB_PASS must come from the postgres Secret: %+v", e)
		}
	}
	// The restore accepts only a bundle signed by the Secret's public key.
	if !strings.Contains(cmdline, "--signer /var/run/kubectl-assisted/identity/signer.pub") || strings.Contains(cmdline, "--allow-unsigned") {
		t.Fatalf("command line %q: no --signer", cmdline)
	}
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && s.Name == IdentitySecret && string(s.Data["signer.pub"]) != validOptions().Signer {
			t.Fatalf("identity Secret keys %v: no signer.pub", s.Data)
		}
	}
	side := job.Spec.Template.Spec.InitContainers[0]
	if side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways || side.Image != DefaultDatabaseImage {
		t.Fatalf("database sidecar = %+v", side)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"tag not digest", func(o *Options) { o.Ref = "registry.example.com/b:latest" }, "pinned by digest"},
		{"no image", func(o *Options) { o.RestoreImage = "" }, "restore image"},
		{"no signer", func(o *Options) { o.Signer = "" }, "signer"},
		{"no sizes", func(o *Options) { o.DatabaseSize = resource.Quantity{} }, "PVC sizes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.mutate(&o)
			if _, err := Objects(o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Objects() error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestObjects_NoPasswordInArgs: the Job's containers take the database
// password from the postgres Secret through their environment; no command,
// arg or literal env value holds one, and extra arguments that would carry
// one are refused, whatever the DSN form.
func TestObjects_NoPasswordInArgs(t *testing.T) {
	objs, err := Objects(validOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		job, ok := o.(*batchv1.Job)
		if !ok {
			continue
		}
		spec := job.Spec.Template.Spec
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				if secretArg(a) {
					t.Fatalf("container %s: arg %q", c.Name, a)
				}
			}
			for _, e := range c.Env {
				if strings.Contains(strings.ToLower(e.Name), "pass") && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
					t.Fatalf("container %s: %s is not read from a Secret", c.Name, e.Name)
				}
			}
		}
	}
	for _, extra := range [][]string{
		{"--db", "host=db user=u password=pw"},
		{"--db=postgres://u:pw@db/x"},
		{"--service-url", "postgres://u:pw@db/x"},
		{"--namespace-mapping", "a=b", "--db-env-file", "/x"},
		{"--context", "host=db password = 'x y'"},
		{"--registry-config", "postgresql://db/x?password=pw"},
	} {
		o := validOptions()
		o.ExtraArgs = extra
		_, err := Objects(o)
		if err == nil || strings.Contains(err.Error(), "pw") {
			t.Errorf("ExtraArgs %q: err = %v, want a refusal that does not quote them", extra, err)
		}
	}
	o := validOptions()
	o.ExtraArgs = []string{"--service-url", "https://assisted.example.com", "--namespace-mapping", "a=b"}
	if _, err := Objects(o); err != nil {
		t.Fatalf("harmless extra args refused: %v", err)
	}
}
