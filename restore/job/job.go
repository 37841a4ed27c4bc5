// Package job builds the objects that run `kubectl-assisted restore` inside
// cluster 0 when node 0 cannot reach cluster 0's database and storage directly:
// the operator's PVCs pre-created with the AgentServiceConfig's sizes, a service
// account allowed to create the restored resources, the Secrets the Job needs
// (age identity, registry credentials), and the Job itself.
//
// The Job runs PostgreSQL from the operator's database image as a native sidecar
// (an init container with restartPolicy Always) on the `postgres` PVC, so the
// sclorg image initialises PGDATA exactly as the operator's Deployment will find
// it later, and the restore container loads the bundle into it and into the
// `assisted-service` PVC mounted at /data. When the restore container exits, the
// kubelet stops the sidecar with SIGTERM, which PostgreSQL treats as a clean
// (smart) shutdown.
package job

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Defaults that match what the infrastructure operator creates.
const (
	// DefaultDatabaseImage is the operator's default DATABASE_IMAGE.
	DefaultDatabaseImage = "quay.io/sclorg/postgresql-16-c9s:latest"
	DatabasePVC          = "postgres"
	FilesystemPVC        = "assisted-service"
	PostgresSecret       = "postgres"
	ServiceAccount       = "kubectl-assisted-restore"
	IdentitySecret       = "kubectl-assisted-restore-identity"
	RegistrySecret       = "kubectl-assisted-restore-registry"
	// IdentityKey is the key of IdentitySecret holding the age identity.
	IdentityKey = "identity.txt"
	// SignerKey is the key of IdentitySecret holding the signer's public
	// key (PEM): the restore accepts only a bundle signed by it.
	SignerKey = "signer.pub"
	// ManagedByLabel marks every object this package builds.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "kubectl-assisted"
)

// Options describe one in-cluster restore.
type Options struct {
	Namespace string
	// Ref is the bundle reference the Job pulls, pinned by digest (REPO@sha256:...).
	Ref string
	// Digest is the bundle's manifest digest; it names the Job.
	Digest string
	// RestoreImage is an image with kubectl-assisted in it (see Containerfile).
	RestoreImage string
	// DatabaseImage is the operator's database image (DefaultDatabaseImage).
	DatabaseImage string
	// DatabaseSize and FilesystemSize must equal the AgentServiceConfig's
	// databaseStorage and filesystemStorage requests: the operator can grow a PVC
	// but never shrink it.
	DatabaseSize, FilesystemSize resource.Quantity
	// StorageClassName for both PVCs; nil means the cluster default.
	StorageClassName *string
	// Identity is the age identity that decrypts the bundle (goes into a Secret).
	Identity string
	// Signer is the PEM public key the bundle must be signed by (goes into
	// the same Secret, passed as --signer). Required: the Job never restores
	// an unsigned bundle.
	Signer string
	// RegistryAuth is a docker config.json for pulling the bundle; empty for none.
	RegistryAuth []byte
	// ExtraArgs are appended to the restore command line (e.g. --service-url).
	ExtraArgs []string
}

// Validate checks the options.
func (o *Options) Validate() error {
	var missing []string
	for name, v := range map[string]string{"namespace": o.Namespace, "bundle reference": o.Ref, "digest": o.Digest, "restore image": o.RestoreImage, "identity": o.Identity, "signer": o.Signer} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("in-cluster restore needs: %s", strings.Join(sorted(missing), ", "))
	}
	if !strings.Contains(o.Ref, "@sha256:") {
		return fmt.Errorf("bundle reference %q must be pinned by digest (REPO@sha256:...)", o.Ref)
	}
	if o.DatabaseSize.IsZero() || o.FilesystemSize.IsZero() {
		return fmt.Errorf("PVC sizes must be set to the AgentServiceConfig's databaseStorage and filesystemStorage requests")
	}
	for _, a := range o.ExtraArgs {
		if secretArg(a) {
			// Never quote a: it may be the secret.
			return fmt.Errorf("the restore Job's extra arguments may not name a database or hold a password: the Job reads the database from the postgres Secret through its environment, and a Pod's args are readable by anyone who can read the Job")
		}
	}
	return nil
}

var userinfoPassword = regexp.MustCompile(`(?i)postgres(ql)?://[^/@?#]*:[^/@?#]*@`)

// secretArg reports an argument that names a database (its DSN can hold a
// password) or holds one.
func secretArg(a string) bool {
	l := strings.ToLower(a)
	return l == "--db" || strings.HasPrefix(l, "--db=") || l == "--db-env-file" || strings.HasPrefix(l, "--db-env-file=") ||
		strings.Contains(l, "password") || userinfoPassword.MatchString(a)
}

// JobName names the Job after the bundle digest, so a rerun finds its Job.
func JobName(digest string) string {
	d := strings.TrimPrefix(digest, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return "kubectl-assisted-restore-" + d
}

// Objects returns everything to apply, in apply order: PVCs, Secrets, RBAC, Job.
func Objects(o Options) ([]runtime.Object, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.DatabaseImage == "" {
		o.DatabaseImage = DefaultDatabaseImage
	}
	labels := map[string]string{ManagedByLabel: ManagedBy}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels}
	}
	objs := []runtime.Object{
		pvc(meta(DatabasePVC), o.DatabaseSize, o.StorageClassName),
		pvc(meta(FilesystemPVC), o.FilesystemSize, o.StorageClassName),
		&corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: meta(IdentitySecret), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{IdentityKey: []byte(o.Identity), SignerKey: []byte(o.Signer)}},
	}
	if len(o.RegistryAuth) > 0 {
		objs = append(objs, &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: meta(RegistrySecret),
			Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: o.RegistryAuth}})
	}
	objs = append(objs, rbac(o, labels)...)
	objs = append(objs, restoreJob(o, meta(JobName(o.Digest))))
	return objs, nil
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func pvc(meta metav1.ObjectMeta, size resource.Quantity, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   typeMeta("v1", "PersistentVolumeClaim"),
		ObjectMeta: meta,
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			StorageClassName: class,
		},
	}
}

// rbac lets the Job create what a restore creates. ClusterImageSets and
// Namespaces are cluster-scoped, and a namespace mapping may target any
// namespace, hence a ClusterRole.
func rbac(o Options, labels map[string]string) []runtime.Object {
	name := ServiceAccount + "-" + o.Namespace
	verbs := []string{"get", "list", "watch", "create", "update", "patch"}
	role := &rbacv1.ClusterRole{
		TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "ClusterRole"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces", "secrets", "configmaps"}, Verbs: verbs},
			{APIGroups: []string{"hive.openshift.io"}, Resources: []string{"clusterimagesets", "clusterdeployments"}, Verbs: verbs},
			{APIGroups: []string{"extensions.hive.openshift.io"}, Resources: []string{"agentclusterinstalls"}, Verbs: verbs},
			{APIGroups: []string{"agent-install.openshift.io"}, Resources: []string{"infraenvs", "nmstateconfigs", "agents", "agentclassifications"}, Verbs: verbs},
			{APIGroups: []string{"agent-install.openshift.io"}, Resources: []string{"agents/status", "infraenvs/status"}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{"extensions.hive.openshift.io"}, Resources: []string{"agentclusterinstalls/status"}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{"metal3.io"}, Resources: []string{"baremetalhosts"}, Verbs: verbs},
		},
	}
	return []runtime.Object{
		&corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: o.Namespace, Labels: labels}},
		role,
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: ServiceAccount, Namespace: o.Namespace}},
		},
	}
}

func secretEnv(name, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: PostgresSecret}, Key: key}}}
}

func restoreJob(o Options, meta metav1.ObjectMeta) *batchv1.Job {
	always := corev1.ContainerRestartPolicyAlways
	backoff := int32(3)
	nonRoot := true
	noEscalation := false
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: &noEscalation,
		RunAsNonRoot:             &nonRoot,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	// The operator's postgres container reads these from the same Secret.
	dbEnv := []corev1.EnvVar{
		secretEnv("POSTGRESQL_USER", "db.user"),
		secretEnv("POSTGRESQL_PASSWORD", "db.password"),
		secretEnv("POSTGRESQL_DATABASE", "db.name"),
	}
	// The restore container finds the database through assisted-service's own
	// variables; the password never appears on a command line.
	restoreEnv := []corev1.EnvVar{
		{Name: "DB_HOST", Value: "127.0.0.1"},
		secretEnv("DB_PORT", "db.port"),
		secretEnv("DB_USER", "db.user"),
		secretEnv("DB_PASS", "db.password"),
		secretEnv("DB_NAME", "db.name"),
	}
	args := []string{"restore", o.Ref,
		"--identity", "/var/run/kubectl-assisted/identity/" + IdentityKey,
		"--signer", "/var/run/kubectl-assisted/identity/" + SignerKey,
		"--db-from-env",
		"--data-dir", "/data",
		"-n", o.Namespace,
	}
	mounts := []corev1.VolumeMount{
		{Name: "filesystem", MountPath: "/data"},
		{Name: "identity", MountPath: "/var/run/kubectl-assisted/identity", ReadOnly: true},
	}
	volumes := []corev1.Volume{
		{Name: "postgresdb", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: DatabasePVC}}},
		{Name: "filesystem", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: FilesystemPVC}}},
		{Name: "identity", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: IdentitySecret}}},
	}
	if len(o.RegistryAuth) > 0 {
		args = append(args, "--registry-config", "/var/run/kubectl-assisted/registry/"+corev1.DockerConfigJsonKey)
		mounts = append(mounts, corev1.VolumeMount{Name: "registry", MountPath: "/var/run/kubectl-assisted/registry", ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "registry", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: RegistrySecret}}})
	}
	args = append(args, o.ExtraArgs...)
	return &batchv1.Job{
		TypeMeta:   typeMeta("batch/v1", "Job"),
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ManagedByLabel: ManagedBy, "job-name": meta.Name}},
				Spec: corev1.PodSpec{
					ServiceAccountName: ServiceAccount,
					RestartPolicy:      corev1.RestartPolicyNever,
					InitContainers: []corev1.Container{{
						Name:          "postgres",
						Image:         o.DatabaseImage,
						RestartPolicy: &always,
						Env:           dbEnv,
						VolumeMounts:  []corev1.VolumeMount{{Name: "postgresdb", MountPath: "/var/lib/pgsql/data"}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
							Command: []string{"pg_isready", "-h", "127.0.0.1"}}}, PeriodSeconds: 2},
						SecurityContext: sc,
					}},
					Containers: []corev1.Container{{
						Name:            "restore",
						Image:           o.RestoreImage,
						Command:         []string{"kubectl-assisted"},
						Args:            args,
						Env:             restoreEnv,
						VolumeMounts:    mounts,
						SecurityContext: sc,
					}},
					Volumes: volumes,
				},
			},
		},
	}
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
