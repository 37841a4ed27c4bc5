package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"encoding/base64"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// startComponents is step 1: two PostgreSQL servers (node 0 and cluster 0 are
// different sites), the registry the bundle travels through, a mirror
// registry holding the OpenShift release payload for day 2, and cluster 0's
// API server with the real CRDs.
func (d *demo) startComponents(s *stepRun) error {
	d.plugin = harness.NewPlugin(d.r)
	s.say("plugin: %s (found by kubectl's plugin discovery as `kubectl assisted`)", harness.PluginBinary(d.r))

	var err error
	if d.opts.atReboot {
		if err := d.startNode0Container(s); err != nil {
			return err
		}
	} else {
		d.node0PG = harness.StartPostgres(d.r)
		if d.node0DB, err = createDatabase(d.ctx, d.node0PG); err != nil {
			return fmt.Errorf("node 0 database: %w", err)
		}
		s.say("node 0 PostgreSQL %d:    %s", d.node0PG.Version(), d.node0DB)
	}

	if d.opts.job {
		d.cluster = harness.SharedCluster(d.r)
		d.r.Cleanup(d.cluster.Stop)
		s.say("cluster 0:               a real node: kubelet, containerd, runc, kube-proxy, controller-manager, scheduler (%s at %s)", harness.NodeName, harness.NodeIP)
	} else {
		d.cluster0PG = harness.StartPostgres(d.r)
		if d.cluster0DB, err = createDatabase(d.ctx, d.cluster0PG); err != nil {
			return fmt.Errorf("cluster 0 database: %w", err)
		}
		s.say("cluster 0 PostgreSQL %d: %s (empty, as MCE's postgres container makes it)", d.cluster0PG.Version(), d.cluster0DB)
		d.cluster0Data = d.path("cluster0", "data")
	}

	if d.opts.job {
		// On the node's address: the Job's pod pulls from it too.
		d.registry = harness.StartDockerRegistry(d.r, harness.DockerRegistryOptions{TLS: true, Auth: true, IP: harness.NodeIP})
		d.cluster.TrustRegistry(d.r, d.registry)
		s.say("registry:                https://%s (docker-registry, TLS with its own CA, basic auth; the node trusts the CA)", d.registry.Host)
	} else if _, err := exec.LookPath("docker-registry"); err == nil {
		d.registry = harness.StartDockerRegistry(d.r, harness.DockerRegistryOptions{TLS: true, Auth: true})
		s.say("registry:                https://%s (docker-registry, TLS with its own CA, basic auth)", d.registry.Host)
	} else {
		d.registry = harness.StartInProcessRegistry(d.r)
		d.registryNote = "docker-registry is not installed (Debian package docker-registry): the bundle goes through an in-process registry over plain HTTP"
		s.say("note: %s", d.registryNote)
		s.say("registry:                http://%s (in-process)", d.registry.Host)
	}
	d.mirror = harness.StartInProcessRegistry(d.r)
	s.say("release mirror:          http://%s (in-process; holds the OpenShift release payload for day 2)", d.mirror.Host)

	if d.cluster != nil {
		d.kube = d.cluster.Kube
	} else {
		d.kube = harness.SharedKube(d.r)
		d.r.Cleanup(d.kube.Stop)
	}
	if err := mkdirs(d.path("cluster0")); err != nil {
		return err
	}
	d.kubeconfig = d.path("cluster0", "kubeconfig")
	if err := d.kube.WriteKubeconfig(d.kubeconfig, harness.AdminUser, serviceNamespace); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: serviceNamespace}}
	if _, err := d.kube.Clientset(d.r).CoreV1().Namespaces().Create(d.ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", serviceNamespace, err)
	}
	if err := d.seedController(); err != nil {
		return fmt.Errorf("assisted-installer-controller on cluster 0: %w", err)
	}
	if d.cluster != nil {
		if err := d.startOperator(s); err != nil {
			return err
		}
	}
	files, _ := harness.CRDFiles()
	s.say("cluster 0 API:           %s (kube-apiserver + etcd, %d CRD files, namespace %s where MCE runs assisted-service)", d.kube.Server, len(files), serviceNamespace)
	s.say("cluster 0 kubeconfig:    %s", d.kubeconfig)
	s.say("                         assisted-installer-controller config on cluster 0 points at node 0: %s", node0ServiceURL)
	return nil
}

// seedController makes what the installer leaves on cluster 0 for the
// assisted-installer-controller: its namespace, its ConfigMap with node 0's
// service URL, and its Secret with a node-0 token. Switching them over is
// the migration's last step.
func (d *demo) seedController() error {
	cs := d.kube.Clientset(d.r)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(d.ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	token := "node0-" + base64.RawURLEncoding.EncodeToString(randomBytes(24))
	d.secrets["node-0 controller token"] = token
	labels := map[string]string{"app": "assisted-installer-controller"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-config", Namespace: controllerNamespace, Labels: labels},
		Data: map[string]string{"cluster-id": assisted.ScenarioUUID(clusterName + "/cluster"), "inventory-url": node0ServiceURL,
			"ca-cert-path": "", "skip-cert-verification": "false", "openshift-version": openshiftVersion, "high-availability-mode": "Full"}}
	if _, err := cs.CoreV1().ConfigMaps(controllerNamespace).Create(d.ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "assisted-installer-controller-secret", Namespace: controllerNamespace, Labels: labels},
		Data: map[string][]byte{"pull-secret-token": []byte(token)}}
	_, err := cs.CoreV1().Secrets(controllerNamespace).Create(d.ctx, sec, metav1.CreateOptions{})
	return err
}

// createDatabase makes assisted-service's database on a private server and
// returns its URL.
func createDatabase(ctx context.Context, s *harness.Server) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE DATABASE "+databaseName+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		return "", err
	}
	return s.URL(databaseName), nil
}

// registryArgs are the plugin's flags to reach the bundle registry.
func (d *demo) registryArgs() []string {
	var a []string
	if d.registry.PlainHTTP {
		a = append(a, "--plain-http")
	}
	if d.registry.CAFile != "" {
		a = append(a, "--ca-file", d.registry.CAFile)
	}
	if d.registry.AuthFile != "" {
		a = append(a, "--registry-config", d.registry.AuthFile)
	}
	return a
}

// operatorMajor is the PostgreSQL major of the demo's operator: 12, the
// DATABASE_IMAGE of release-4.17 and release-4.19 (images.go).
const operatorMajor = 12

// startOperator readies cluster 0 for the restore Job: the infrastructure
// operator's Deployment (its DATABASE_IMAGE served by the node's mirror),
// local volumes in a storage class, and the AgentServiceConfig asking for
// them.
func (d *demo) startOperator(s *stepRun) error {
	d.cluster.StartOperator(d.r, serviceNamespace, operatorMajor, nil)
	d.cluster.LocalVolumes(d.r, storageClass, "5Gi", "5Gi")
	d.ascFile = d.path("cluster0", "agentserviceconfig.yaml")
	asc := fmt.Sprintf(`apiVersion: agent-install.openshift.io/v1beta1
kind: AgentServiceConfig
metadata:
  name: agent
spec:
  databaseStorage:
    storageClassName: %[1]s
    accessModes: [ReadWriteOnce]
    resources: {requests: {storage: 2Gi}}
  filesystemStorage:
    storageClassName: %[1]s
    accessModes: [ReadWriteOnce]
    resources: {requests: {storage: 2Gi}}
`, storageClass)
	if err := os.WriteFile(d.ascFile, []byte(asc), 0o644); err != nil {
		return err
	}
	s.say("infrastructure operator: Deployment %s/infrastructure-operator, DATABASE_IMAGE %s (built here, served by the node's mirror)", serviceNamespace, harness.OperatorDatabaseImage(operatorMajor))
	s.say("storage:                 local volumes in storage class %s (WaitForFirstConsumer); AgentServiceConfig %s", storageClass, d.ascFile)
	return nil
}

// storageClass holds the demo's local volumes on the node.
const storageClass = "demo-local"
