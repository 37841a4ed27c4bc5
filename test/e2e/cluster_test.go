package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// TestCluster_PostgresImagesKeepSclorgsContract runs the test node's
// PostgreSQL images on the real kubelet the way the infrastructure operator
// runs DATABASE_IMAGE (its postgres container in newAssistedServiceDeployment,
// openshift/assisted-service release-4.19
// internal/controller/controllers/agentserviceconfig_controller.go: env
// POSTGRESQL_DATABASE/USER/PASSWORD from the postgres Secret, the PVC at
// /var/lib/pgsql/data, the image's own entry point, the default pull
// policy): the server comes up on a local volume, takes the password, and a
// server of another major refuses that data directory as sclorg's
// try_pgupgrade does ("Incompatible data directory", sclorg/postgresql-container
// 12/root/usr/share/container-scripts/postgresql/common.sh). The job-mode
// tests stand on these images being faithful.
func TestCluster_PostgresImagesKeepSclorgsContract(t *testing.T) {
	c := harness.SharedCluster(t)
	ns := c.Namespace(t)
	cs := c.Clientset(t)
	ctx := context.Background()
	class := "kat-" + ns
	c.LocalVolumes(t, class, "1Gi")
	for _, major := range []int{12, 13} {
		img, err := harness.PostgresImage(major)
		if err != nil {
			harness.Unavailable(t, fmt.Sprintf("PostgreSQL %d image", major), err)
		}
		c.MirrorImage(t, harness.OperatorDatabaseImage(major), img)
	}
	const password = "Pg-Passw0rd-kat"
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "postgres"},
		StringData: map[string]string{"db.user": "admin", "db.password": password, "db.name": "installer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "postgres"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	pod := postgresPod(harness.OperatorDatabaseImage(12))
	ip := runPod(t, c, cs, ns, pod)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://admin:%s@%s:5432/installer?sslmode=disable", password, ip))
	if err != nil {
		t.Fatalf("connect to the pod's PostgreSQL with the Secret's password: %v\n%s", err, c.Describe(t, ns))
	}
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	if version/10000 != 12 {
		t.Fatalf("server_version_num %d, want PostgreSQL 12", version)
	}
	if _, err := pgx.Connect(ctx, fmt.Sprintf("postgres://admin:wrong@%s:5432/installer?sslmode=disable", ip)); err == nil {
		t.Fatal("a wrong password connected: pg_hba.conf is not md5 for host connections")
	}
	deletePod(t, cs, ns, pod.Name)

	// The same volume under PostgreSQL 13: refused, never upgraded.
	pod13 := postgresPod(harness.OperatorDatabaseImage(13))
	pod13.Name = "postgres-13"
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod13, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var logs string
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod13.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := p.Status.ContainerStatuses; len(st) == 1 && st[0].LastTerminationState.Terminated != nil {
			logs = c.PodLogs(t, ns, pod13.Name, "postgres")
			if st[0].Ready {
				t.Fatalf("PostgreSQL 13 became ready on a PostgreSQL 12 data directory:\n%s", logs)
			}
			break
		}
		time.Sleep(time.Second)
	}
	if !strings.Contains(logs, "Incompatible data directory") || !strings.Contains(logs, "version '12'") {
		t.Fatalf("PostgreSQL 13 on a 12 data directory: want sclorg's refusal, got:\n%s\n%s", logs, c.Describe(t, ns))
	}
}

// postgresPod is the operator's postgres container alone in a pod.
func postgresPod(image string) *corev1.Pod {
	env := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "postgres"}, Key: key}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "postgres"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:         "postgres",
				Image:        image,
				Ports:        []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432}},
				Env:          []corev1.EnvVar{env("POSTGRESQL_DATABASE", "db.name"), env("POSTGRESQL_USER", "db.user"), env("POSTGRESQL_PASSWORD", "db.password")},
				VolumeMounts: []corev1.VolumeMount{{Name: "postgresdb", MountPath: "/var/lib/pgsql/data"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-h", "127.0.0.1"}}},
					PeriodSeconds: 1},
			}},
			Volumes: []corev1.Volume{{Name: "postgresdb", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "postgres"}}}},
		},
	}
}

// runPod creates pod and waits until it is ready; it returns its IP.
func runPod(t *testing.T, c *harness.Cluster, cs kubernetes.Interface, ns string, pod *corev1.Pod) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
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
				return p.Status.PodIP
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s not ready:\n%s", ns, pod.Name, c.Describe(t, ns))
	return ""
}

// deletePod deletes a pod and waits until it is gone.
func deletePod(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s still there", ns, name)
}
