package job

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func storage(size string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}
}

func validOptions() Options {
	return Options{
		Namespace:    "multicluster-engine",
		Ref:          "registry.example.com/assisted/bundle@sha256:" + strings.Repeat("ab", 32),
		Digest:       "sha256:" + strings.Repeat("ab", 32),
		RestoreImage: "registry.example.com/assisted/bundle@sha256:" + strings.Repeat("cd", 32),
		Operator: Operator{Namespace: "multicluster-engine", Deployment: "infrastructure-operator",
			DatabaseImage: "quay.io/sclorg/postgresql-12-c8s:latest",
			NodeSelector:  map[string]string{"node-role.kubernetes.io/infra": ""},
			Tolerations:   []corev1.Toleration{{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			OpenShift:     true},
		DatabaseMajor:     12,
		DatabaseStorage:   storage("10Gi"),
		FilesystemStorage: storage("20Gi"),
		Identity:          "AGE-SECRET-KEY-1TEST",
		Signer:            "-----BEGIN PUBLIC KEY-----\nTEST\n-----END PUBLIC KEY-----\n",
		RegistryAuth:      []byte(`{"auths":{}}`),
		RegistryCA:        []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"),
	}
}

func objectsOf(t *testing.T, o Options) (*batchv1.Job, map[string]*corev1.PersistentVolumeClaim, map[string]bool) {
	t.Helper()
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	var job *batchv1.Job
	pvcs := map[string]*corev1.PersistentVolumeClaim{}
	names := map[string]bool{}
	for _, obj := range objs {
		switch v := obj.(type) {
		case *batchv1.Job:
			job = v
		case *corev1.PersistentVolumeClaim:
			pvcs[v.Name] = v
		case *corev1.Secret:
			names["Secret/"+v.Name] = true
		case *corev1.ConfigMap:
			names["ConfigMap/"+v.Name] = true
		}
	}
	if job == nil {
		t.Fatal("no Job")
	}
	return job, pvcs, names
}

func TestObjects(t *testing.T) {
	o := validOptions()
	job, pvcs, names := objectsOf(t, o)
	if job.Name != "kubectl-assisted-restore-abababababab" {
		t.Fatalf("job name %s", job.Name)
	}
	c := job.Spec.Template.Spec.Containers[0]
	cmdline := strings.Join(append(c.Command, c.Args...), " ")
	if !strings.Contains(cmdline, "restore "+o.Ref) || strings.Contains(cmdline, "AGE-SECRET-KEY") {
		t.Fatalf("command line %q", cmdline)
	}
	for _, want := range []string{"--database-major 12", "--ca-file /var/run/kubectl-assisted/ca/ca.crt", "--registry-config /var/run/kubectl-assisted/registry/.dockerconfigjson"} {
		if !strings.Contains(cmdline, want) {
			t.Errorf("command line %q lacks %q", cmdline, want)
		}
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
	if c.Image != o.RestoreImage || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("restore container: image %s, termination message policy %s", c.Image, c.TerminationMessagePolicy)
	}
	for _, want := range []string{"Secret/" + IdentitySecret, "Secret/" + RegistrySecret, "ConfigMap/" + CAConfigMap} {
		if !names[want] {
			t.Errorf("no %s among %v", want, names)
		}
	}
	spec := job.Spec.Template.Spec
	if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != RegistrySecret {
		t.Errorf("the restore image is pulled with the bundle's credentials: imagePullSecrets %v", spec.ImagePullSecrets)
	}
	if spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds < 300 {
		t.Errorf("grace period %v: too short for PostgreSQL's shutdown checkpoint", spec.TerminationGracePeriodSeconds)
	}
	side := spec.InitContainers[0]
	if side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways || side.Image != o.Operator.DatabaseImage {
		t.Fatalf("database sidecar = %+v", side)
	}
	if p := side.StartupProbe; p == nil || p.Exec == nil || p.Exec.Command[0] != "pg_isready" || int(p.PeriodSeconds)*int(p.FailureThreshold) < 600 {
		t.Errorf("sidecar startupProbe %+v: the restore must wait for PostgreSQL, minutes if it recovers", p)
	}
	if len(side.VolumeMounts) != 1 || side.VolumeMounts[0].MountPath != "/var/lib/pgsql/data" {
		t.Errorf("sidecar mounts %v, want the operator's /var/lib/pgsql/data", side.VolumeMounts)
	}
	// Placement: the operator pod's, which it copies into assisted-service's.
	if !equality.Semantic.DeepEqual(spec.NodeSelector, o.Operator.NodeSelector) || !equality.Semantic.DeepEqual(spec.Tolerations, o.Operator.Tolerations) {
		t.Errorf("placement: node selector %v tolerations %v, want the operator's", spec.NodeSelector, spec.Tolerations)
	}
	if spec.SecurityContext != nil && spec.SecurityContext.FSGroup != nil {
		t.Errorf("on OpenShift the SCC assigns the fsGroup; the Job set %d", *spec.SecurityContext.FSGroup)
	}
	// PVCs: the AgentServiceConfig's specs as they are.
	if !equality.Semantic.DeepEqual(pvcs[DatabasePVC].Spec, o.DatabaseStorage) || !equality.Semantic.DeepEqual(pvcs[FilesystemPVC].Spec, o.FilesystemStorage) {
		t.Errorf("PVC specs %+v / %+v, want the AgentServiceConfig's", pvcs[DatabasePVC].Spec, pvcs[FilesystemPVC].Spec)
	}
	// Refusals another pod cannot change fail the Job at once.
	rules := job.Spec.PodFailurePolicy.Rules
	if len(rules) == 0 || rules[0].Action != batchv1.PodFailurePolicyActionFailJob || *rules[0].OnExitCodes.ContainerName != RestoreContainer ||
		!slices.Contains(rules[0].OnExitCodes.Values, 9) || slices.Contains(rules[0].OnExitCodes.Values, 1) {
		t.Errorf("pod failure policy %+v", rules)
	}
}

// The PVC spec carries everything the AgentServiceConfig asks for: class,
// access modes, limits, selector, mode.
func TestObjects_PVCsAreTheAgentServiceConfigs(t *testing.T) {
	o := validOptions()
	class := "lvms-vg1"
	block := corev1.PersistentVolumeFilesystem
	o.FilesystemStorage = corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		StorageClassName: &class,
		VolumeMode:       &block,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")},
			Limits: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("60Gi")}},
	}
	_, pvcs, _ := objectsOf(t, o)
	if got := pvcs[FilesystemPVC].Spec; !equality.Semantic.DeepEqual(got, o.FilesystemStorage) {
		t.Fatalf("PVC spec %+v, want %+v", got, o.FilesystemStorage)
	}
	// The options keep theirs: the PVC is a copy.
	pvcs[FilesystemPVC].Spec.AccessModes[0] = corev1.ReadOnlyMany
	if o.FilesystemStorage.AccessModes[0] != corev1.ReadWriteMany {
		t.Fatal("the PVC shares its spec with the options")
	}
}

// Not OpenShift: fsGroup 0, as the operator gives its Deployment.
func TestObjects_FSGroupOffOpenShift(t *testing.T) {
	o := validOptions()
	o.Operator.OpenShift = false
	job, _, _ := objectsOf(t, o)
	sc := job.Spec.Template.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil || *sc.FSGroup != 0 {
		t.Fatalf("pod security context %+v, want fsGroup 0", sc)
	}
}

func TestObjects_DatabaseImageOverride(t *testing.T) {
	o := validOptions()
	o.DatabaseImage = "mirror.example.com/rhel8/postgresql-12@sha256:" + strings.Repeat("1", 64)
	o.RegistryCA, o.RegistryAuth, o.DatabaseMajor = nil, nil, 0
	job, _, names := objectsOf(t, o)
	spec := job.Spec.Template.Spec
	if spec.InitContainers[0].Image != o.DatabaseImage {
		t.Errorf("sidecar image %s", spec.InitContainers[0].Image)
	}
	args := strings.Join(spec.Containers[0].Args, " ")
	if strings.Contains(args, "--database-major") || strings.Contains(args, "--ca-file") || strings.Contains(args, "--registry-config") ||
		len(spec.ImagePullSecrets) != 0 || names["ConfigMap/"+CAConfigMap] {
		t.Errorf("args %q, pull secrets %v, objects %v: nothing to pass", args, spec.ImagePullSecrets, names)
	}
}

func TestDatabaseMajorOf(t *testing.T) {
	for image, want := range map[string]int{
		"quay.io/sclorg/postgresql-12-c8s:latest":                                  12,
		"quay.io/sclorg/postgresql-16-c9s:latest":                                  16,
		"registry.redhat.io/rhel8/postgresql-12@sha256:" + strings.Repeat("a", 64): 12,
		"registry.redhat.io/rhel9/postgresql-13:1-200":                             13,
		"mirror.example.com:5000/rhel9/postgresql-15":                              15,
		"quay.io/example/postgres:16":                                              0,
		"quay.io/example/db:latest":                                                0,
		"quay.io/postgresql-120/x:1":                                               0,
	} {
		if got := DatabaseMajorOf(image); got != want {
			t.Errorf("DatabaseMajorOf(%s) = %d, want %d", image, got, want)
		}
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
		{"no database image", func(o *Options) { o.Operator.DatabaseImage = "" }, "DATABASE_IMAGE"},
		{"no storage", func(o *Options) { o.DatabaseStorage = corev1.PersistentVolumeClaimSpec{} }, "databaseStorage"},
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
	job, _, _ := objectsOf(t, validOptions())
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
