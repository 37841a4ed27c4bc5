// Package job builds the objects that run `kubectl-assisted restore` inside
// cluster 0 when node 0 cannot reach cluster 0's database and storage
// directly: the operator's PVCs pre-created exactly as it would create them,
// a service account allowed to create the restored resources, the Secrets
// and ConfigMap the Job needs (age identity and signer, registry credentials
// and CA), and the Job itself.
//
// The Job is fitted to the infrastructure operator that will run what it
// leaves (openshift/assisted-service internal/controller/controllers/
// agentserviceconfig_controller.go and cmd/operator/main.go, release-4.17
// and release-4.19):
//
//   - PostgreSQL runs from the operator's own DATABASE_IMAGE as a native
//     sidecar (an init container with restartPolicy Always) on the
//     `postgres` PVC, mounted at /var/lib/pgsql/data with the same
//     POSTGRESQL_* variables from the same Secret as the operator's postgres
//     container (newAssistedServiceDeployment): the image initialises PGDATA
//     as the operator's Deployment will find it, of the major that will run
//     it;
//   - the PVCs get the AgentServiceConfig's whole databaseStorage and
//     filesystemStorage specs, as newDatabasePVC and newFilesystemPVC create
//     them; on adoption the operator then only sets the owner (and the
//     requests, which are already its own);
//   - the pod is scheduled where the assisted-service pod will be: the
//     operator copies its own pod's nodeSelector and tolerations into that
//     Deployment (cmd/operator/main.go), so the Job carries the same, and
//     volumes bound on first use (WaitForFirstConsumer) land on a node the
//     service can run on;
//   - on a cluster that is not OpenShift the operator gives the pod fsGroup 0
//     (newAssistedServiceDeployment, !IsOpenShift); so does the Job. On
//     OpenShift the restricted-v2 SCC assigns the namespace's UID and
//     fsGroup to both pods alike.
//
// The kubelet starts the restore container once the sidecar's startupProbe
// (pg_isready, which sclorg's images carry) passes, and the restore retries
// its first connection as well. When the restore exits the kubelet stops the
// sidecar with SIGTERM, PostgreSQL's smart shutdown, which ends with a
// checkpoint; the grace period leaves that checkpoint the time it needs.
// Refusals that another try cannot change (a bundle that fails its checks,
// a server of the wrong major) fail the Job at once (podFailurePolicy);
// anything else is retried.
package job

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Names of what the operator creates and the Job pre-creates or reads
// (agentserviceconfig_controller.go: serviceName, databaseName).
const (
	DatabasePVC    = "postgres"
	FilesystemPVC  = "assisted-service"
	PostgresSecret = "postgres"
	ServiceAccount = "kubectl-assisted-restore"
	IdentitySecret = "kubectl-assisted-restore-identity"
	RegistrySecret = "kubectl-assisted-restore-registry"
	CAConfigMap    = "kubectl-assisted-restore-ca"
	// IdentityKey is the key of IdentitySecret holding the age identity.
	IdentityKey = "identity.txt"
	// SignerKey is the key of IdentitySecret holding the signer's public
	// key (PEM): the restore accepts only a bundle signed by it.
	SignerKey = "signer.pub"
	// CAKey is the key of CAConfigMap holding the registry's CA bundle.
	CAKey = "ca.crt"
	// ManagedByLabel marks every object this package builds.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "kubectl-assisted"
	// DataMount and DatabaseMount are where the operator's Deployment
	// mounts the two PVCs (assisted-service's /data, sclorg's volume).
	DataMount     = "/data"
	DatabaseMount = "/var/lib/pgsql/data"
	// RestoreContainer names the Job's restore container.
	RestoreContainer = "restore"
)

// TerminationGracePeriod is the Job pod's grace period, in seconds: what
// PostgreSQL's shutdown checkpoint may take after a large load. The
// checkpoint writes the dirty shared buffers (32MB in sclorg's
// configuration) and syncs what was written since the last checkpoint,
// which max_wal_size (1GB by default) bounds: a few seconds on a fast disk,
// minutes on a slow one. Cut short, PostgreSQL would recover from its WAL at
// the next start instead.
const TerminationGracePeriod = 600

// DatabaseWait is how long the restore waits for the sidecar's PostgreSQL
// to accept connections (restore --database-wait).
const DatabaseWait = "10m"

// PermanentExitCodes are the restore's exit codes for refusals another try
// cannot change (docs/exit-codes.md): usage (2), every bundle check (3-9),
// a target that is not empty (20), conflicting objects or journal (21), CRs
// that do not match the rows (22), drift (23), a target PostgreSQL that
// refuses the bundle's schema (26) or is not the major cluster 0 runs (27).
// Any other failure (network, a killed pod) is retried by the Job.
var PermanentExitCodes = []int32{2, 3, 4, 5, 6, 7, 8, 9, 20, 21, 22, 23, 26, 27}

// Operator is what the Job takes from cluster 0's infrastructure operator.
type Operator struct {
	// Namespace and Deployment name the operator's Deployment.
	Namespace, Deployment string
	// DatabaseImage is its DATABASE_IMAGE.
	DatabaseImage string
	// NodeSelector and Tolerations are its pod's, which it copies into the
	// assisted-service Deployment.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// OpenShift: the cluster serves clusterversions.config.openshift.io,
	// the operator's test for OpenShift (ServerIsOpenShift, kube_compat.go).
	OpenShift bool
}

// Options describe one in-cluster restore.
type Options struct {
	Namespace string
	// Ref is the bundle reference the Job pulls, pinned by digest (REPO@sha256:...).
	Ref string
	// Digest is the bundle's manifest digest; it names the Job.
	Digest string
	// RestoreImage is an image with kubectl-assisted in it, by digest (the
	// self-image migrate pushes beside the bundle, or the user's).
	RestoreImage string
	// Operator is cluster 0's infrastructure operator.
	Operator Operator
	// DatabaseImage overrides Operator.DatabaseImage for the sidecar.
	DatabaseImage string
	// DatabaseMajor is the PostgreSQL major of the operator's
	// DATABASE_IMAGE (0: unknown); the restore refuses a server of another.
	DatabaseMajor int
	// DatabaseStorage and FilesystemStorage are the AgentServiceConfig's
	// spec.databaseStorage and spec.filesystemStorage.
	DatabaseStorage, FilesystemStorage corev1.PersistentVolumeClaimSpec
	// Identity is the age identity that decrypts the bundle (goes into a Secret).
	Identity string
	// Signer is the PEM public key the bundle must be signed by (goes into
	// the same Secret, passed as --signer). Required: the Job never restores
	// an unsigned bundle.
	Signer string
	// RegistryAuth is a docker config.json for pulling the bundle (and the
	// restore image: it is also the pod's image pull secret); empty for none.
	RegistryAuth []byte
	// RegistryCA is the registry's CA bundle (PEM, --ca-file's); empty for none.
	RegistryCA []byte
	// ExtraArgs are appended to the restore command line (e.g. --service-url).
	ExtraArgs []string
}

// SidecarImage is the image the database sidecar runs.
func (o *Options) SidecarImage() string {
	if o.DatabaseImage != "" {
		return o.DatabaseImage
	}
	return o.Operator.DatabaseImage
}

// Validate checks the options.
func (o *Options) Validate() error {
	var missing []string
	for name, v := range map[string]string{"namespace": o.Namespace, "bundle reference": o.Ref, "digest": o.Digest, "restore image": o.RestoreImage,
		"identity": o.Identity, "signer": o.Signer, "database image (the operator's DATABASE_IMAGE)": o.SidecarImage()} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("in-cluster restore needs: %s", strings.Join(missing, ", "))
	}
	if !strings.Contains(o.Ref, "@sha256:") {
		return fmt.Errorf("bundle reference %q must be pinned by digest (REPO@sha256:...)", o.Ref)
	}
	for name, spec := range map[string]corev1.PersistentVolumeClaimSpec{"databaseStorage": o.DatabaseStorage, "filesystemStorage": o.FilesystemStorage} {
		if q := spec.Resources.Requests[corev1.ResourceStorage]; q.IsZero() {
			return fmt.Errorf("the AgentServiceConfig's %s must request storage", name)
		}
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

// postgresMajor finds the major in an image name the way sclorg and Red Hat
// name their PostgreSQL images: postgresql-12-c8s, rhel8/postgresql-12,
// postgresql-16-c9s.
var postgresMajor = regexp.MustCompile(`(?:^|/)postgresql-?(\d{2})(?:[-:@/]|$)`)

// DatabaseMajorOf is the PostgreSQL major an image name declares, or 0.
func DatabaseMajorOf(image string) int {
	m := postgresMajor.FindStringSubmatch(image)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// JobName names the Job after the bundle digest, so a rerun finds its Job.
func JobName(digest string) string {
	d := strings.TrimPrefix(digest, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return "kubectl-assisted-restore-" + d
}

// Objects returns everything to apply, in apply order: PVCs, Secrets and
// ConfigMap, RBAC, Job.
func Objects(o Options) ([]runtime.Object, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	labels := map[string]string{ManagedByLabel: ManagedBy}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels}
	}
	objs := []runtime.Object{
		pvc(meta(DatabasePVC), o.DatabaseStorage),
		pvc(meta(FilesystemPVC), o.FilesystemStorage),
		&corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: meta(IdentitySecret), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{IdentityKey: []byte(o.Identity), SignerKey: []byte(o.Signer)}},
	}
	if len(o.RegistryAuth) > 0 {
		objs = append(objs, &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: meta(RegistrySecret),
			Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: o.RegistryAuth}})
	}
	if len(o.RegistryCA) > 0 {
		objs = append(objs, &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: meta(CAConfigMap),
			Data: map[string]string{CAKey: string(o.RegistryCA)}})
	}
	objs = append(objs, rbac(o, labels)...)
	objs = append(objs, restoreJob(o, meta(JobName(o.Digest))))
	return objs, nil
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// pvc is the operator's PVC (newDatabasePVC, newFilesystemPVC: Spec is the
// AgentServiceConfig's storage spec as it is).
func pvc(meta metav1.ObjectMeta, spec corev1.PersistentVolumeClaimSpec) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{TypeMeta: typeMeta("v1", "PersistentVolumeClaim"), ObjectMeta: meta, Spec: *spec.DeepCopy()}
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

const (
	identityDir = "/var/run/kubectl-assisted/identity"
	registryDir = "/var/run/kubectl-assisted/registry"
	caDir       = "/var/run/kubectl-assisted/ca"
)

func restoreJob(o Options, meta metav1.ObjectMeta) *batchv1.Job {
	always := corev1.ContainerRestartPolicyAlways
	backoff := int32(3)
	grace := int64(TerminationGracePeriod)
	nonRoot := true
	noEscalation := false
	// PSA "restricted" and OpenShift's restricted-v2: no root, no escalation,
	// no capabilities, the runtime's seccomp profile.
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: &noEscalation,
		RunAsNonRoot:             &nonRoot,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	// The operator's postgres container reads these from the same Secret.
	dbEnv := []corev1.EnvVar{
		secretEnv("POSTGRESQL_DATABASE", "db.name"),
		secretEnv("POSTGRESQL_USER", "db.user"),
		secretEnv("POSTGRESQL_PASSWORD", "db.password"),
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
		"--identity", identityDir + "/" + IdentityKey,
		"--signer", identityDir + "/" + SignerKey,
		"--db-from-env",
		"--data-dir", DataMount,
		"-n", o.Namespace,
		"--no-progress",
		// Behind the startupProbe: a server that restarts or recovers
		// after it passed is waited for, not a failed pod.
		"--database-wait", DatabaseWait,
	}
	if o.DatabaseMajor > 0 {
		args = append(args, "--database-major", strconv.Itoa(o.DatabaseMajor))
	}
	mounts := []corev1.VolumeMount{
		{Name: "filesystem", MountPath: DataMount},
		{Name: "identity", MountPath: identityDir, ReadOnly: true},
	}
	volumes := []corev1.Volume{
		{Name: "postgresdb", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: DatabasePVC}}},
		{Name: "filesystem", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: FilesystemPVC}}},
		{Name: "identity", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: IdentitySecret}}},
	}
	var pullSecrets []corev1.LocalObjectReference
	if len(o.RegistryAuth) > 0 {
		args = append(args, "--registry-config", registryDir+"/"+corev1.DockerConfigJsonKey)
		mounts = append(mounts, corev1.VolumeMount{Name: "registry", MountPath: registryDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "registry", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: RegistrySecret}}})
		// The restore image sits beside the bundle: the same credentials pull it.
		pullSecrets = []corev1.LocalObjectReference{{Name: RegistrySecret}}
	}
	if len(o.RegistryCA) > 0 {
		args = append(args, "--ca-file", caDir+"/"+CAKey)
		mounts = append(mounts, corev1.VolumeMount{Name: "registry-ca", MountPath: caDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "registry-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: CAConfigMap}}}})
	}
	args = append(args, o.ExtraArgs...)
	var podSC *corev1.PodSecurityContext
	if !o.Operator.OpenShift {
		// As newAssistedServiceDeployment does when !IsOpenShift.
		zero := int64(0)
		podSC = &corev1.PodSecurityContext{FSGroup: &zero}
	}
	// Exit codes of the restore that fail the Job at once; a pod evicted or
	// preempted is not counted against the backoff limit.
	failurePolicy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr(RestoreContainer), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: PermanentExitCodes}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
	}}
	return &batchv1.Job{
		TypeMeta:   typeMeta("batch/v1", "Job"),
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			BackoffLimit:     &backoff,
			PodFailurePolicy: failurePolicy,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ManagedByLabel: ManagedBy, "job-name": meta.Name}},
				Spec: corev1.PodSpec{
					ServiceAccountName:            ServiceAccount,
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: &grace,
					NodeSelector:                  o.Operator.NodeSelector,
					Tolerations:                   o.Operator.Tolerations,
					SecurityContext:               podSC,
					ImagePullSecrets:              pullSecrets,
					InitContainers: []corev1.Container{{
						Name:          "postgres",
						Image:         o.SidecarImage(),
						RestartPolicy: &always,
						Env:           dbEnv,
						Ports:         []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432, Protocol: corev1.ProtocolTCP}},
						VolumeMounts:  []corev1.VolumeMount{{Name: "postgresdb", MountPath: DatabaseMount}},
						// The restore starts once this passes: a new data
						// directory is initialised first, and an existing one
						// may need crash recovery, which can take minutes.
						StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
							Command: []string{"pg_isready", "-h", "127.0.0.1", "-p", "5432"}}},
							PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 1800},
						SecurityContext: sc,
					}},
					Containers: []corev1.Container{{
						Name:            RestoreContainer,
						Image:           o.RestoreImage,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{"kubectl-assisted"},
						Args:            args,
						Env:             restoreEnv,
						VolumeMounts:    mounts,
						SecurityContext: sc,
						// The pod's status carries the restore's last lines
						// (its error) for migrate to print.
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: volumes,
				},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }
