package harness

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartOperator runs, in ns, a Deployment deployed the way the
// infrastructure operator is (openshift/assisted-service release-4.19
// config/manager/manager.yaml: Deployment infrastructure-operator, labels
// control-plane: infrastructure-operator, container manager with
// DATABASE_IMAGE, NAMESPACE and POD_NAME from the downward API), with the
// given tolerations, on the node; DATABASE_IMAGE is the PostgreSQL image of
// major, which it mirrors on the node. Its container runs the pause image:
// what migrate reads of the operator is its Deployment and its pod. It
// returns once the pod runs.
func (c *Cluster) StartOperator(t testing.TB, ns string, major int, tolerations []corev1.Toleration) {
	t.Helper()
	img, err := PostgresImage(major)
	if err != nil {
		Unavailable(t, fmt.Sprintf("PostgreSQL %d image", major), err)
	}
	c.MirrorImage(t, OperatorDatabaseImage(major), img)
	cs := c.Clientset(t)
	ctx := context.Background()
	labels := map[string]string{"control-plane": "infrastructure-operator"}
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "infrastructure-operator", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"kubernetes.io/hostname": NodeName},
					Tolerations:  tolerations,
					Containers: []corev1.Container{{
						Name: "manager", Image: SandboxImage,
						Env: []corev1.EnvVar{
							{Name: "DATABASE_IMAGE", Value: OperatorDatabaseImage(major)},
							{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						},
					}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=infrastructure-operator"})
		if err == nil && len(pods.Items) > 0 && pods.Items[0].Status.Phase == corev1.PodRunning {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the operator's pod does not run:\n%s", c.Describe(t, ns))
}

// OperatorPostgresContainer is the postgres container of the Deployment the
// operator makes for assisted-service (newAssistedServiceDeployment,
// release-4.19 internal/controller/controllers/agentserviceconfig_controller.go):
// DATABASE_IMAGE, POSTGRESQL_* from the postgres Secret, the postgres PVC
// (volume postgresdb) at /var/lib/pgsql/data, requests 100m and 400Mi.
func OperatorPostgresContainer(major int) corev1.Container {
	env := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "postgres"}, Key: key}}}
	}
	return corev1.Container{
		Name: "postgres", Image: OperatorDatabaseImage(major),
		Ports:        []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432, Protocol: corev1.ProtocolTCP}},
		Env:          []corev1.EnvVar{env("POSTGRESQL_DATABASE", "db.name"), env("POSTGRESQL_USER", "db.user"), env("POSTGRESQL_PASSWORD", "db.password")},
		VolumeMounts: []corev1.VolumeMount{{Name: "postgresdb", MountPath: "/var/lib/pgsql/data"}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("400Mi")}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-h", "127.0.0.1"}}},
			PeriodSeconds: 1},
	}
}

// ServeDatabase runs the operator's postgres container alone in a pod on
// the postgres PVC of ns, with tolerations, and returns the database's URL
// (the pod's address, the Secret's user and password) once it is ready; the
// pod goes when t ends.
func (c *Cluster) ServeDatabase(t testing.TB, ns string, major int, tolerations []corev1.Toleration) string {
	t.Helper()
	cs := c.Clientset(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "assisted-service-postgres"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": NodeName},
			Tolerations:  tolerations,
			Containers:   []corev1.Container{OperatorPostgresContainer(major)},
			Volumes: []corev1.Volume{{Name: "postgresdb", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "postgres"}}}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}) })
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "postgres", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				u := url.URL{Scheme: "postgres", User: url.UserPassword(string(sec.Data["db.user"]), string(sec.Data["db.password"])),
					Host: p.Status.PodIP + ":5432", Path: "/" + string(sec.Data["db.name"]), RawQuery: "sslmode=disable"}
				return u.String()
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the operator's postgres does not become ready:\n%s", c.Describe(t, ns))
	return ""
}

// BoundVolumeDir is the node directory behind the PVC ns/name (bound to a
// volume LocalVolumes made).
func (c *Cluster) BoundVolumeDir(t testing.TB, ns, name string) string {
	t.Helper()
	pvc, err := c.Clientset(t).CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Spec.VolumeName == "" {
		t.Fatalf("PVC %s/%s is not bound", ns, name)
	}
	return c.VolumeDir(pvc.Spec.VolumeName)
}
