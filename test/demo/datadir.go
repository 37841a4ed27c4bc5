package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
)

// manifestSourceXattr is where assisted-service keeps whether a manifest came
// from the user or from the service (pkg/s3wrapper, os_xattr_client.go).
const manifestSourceXattr = "user.assisted-installer-manifest-source"

type fileStats struct {
	files, bytes, xattrs int64
}

// writeDataDir writes assisted-service's file storage (WORK_DIR=/data) as it
// is on node 0 mid-install: the install artifacts of the cluster, a user and a
// system manifest with their source xattr, each host's uploaded logs, and an
// installer cache that bundles leave out.
func writeDataDir(n *node0State, now time.Time, secrets map[string]string) (fileStats, error) {
	c := filepath.Join(n.dataDir, n.clusterID)
	password, err := kubeadminPassword()
	if err != nil {
		return fileStats{}, err
	}
	clientKey := base64.StdEncoding.EncodeToString(randomBytes(1200))
	secrets["kubeadmin password"], secrets["kubeconfig client key"] = password, clientKey

	files := map[string]string{
		"bootstrap.ign":         ignition(180 << 10),
		"master.ign":            pointerIgnition(22623, "master"),
		"worker.ign":            pointerIgnition(22623, "worker"),
		"metadata.json":         fmt.Sprintf(`{"clusterName":%q,"clusterID":%q,"infraID":"%s-x7k2p"}`, clusterName, openshiftClusterID(), clusterName),
		"kubeadmin-password":    password,
		"kubeconfig-noingress":  kubeconfig(clientKey),
		"install-config.yaml":   installConfig(),
		"custom_manifests.json": "[]",
	}
	for _, id := range n.hostIDs {
		files["master-"+id+".ign"] = pointerIgnition(22623, "master")
	}
	for name, body := range files {
		mode := os.FileMode(0o644)
		if name == "kubeadmin-password" || name == "kubeconfig-noingress" || name == "install-config.yaml" {
			mode = 0o600
		}
		if err := writeFile(filepath.Join(c, name), []byte(body), mode); err != nil {
			return fileStats{}, err
		}
	}

	// A user manifest (chrony for the masters) and a system one.
	manifests := []struct{ path, body, source string }{
		{"manifests/openshift/50-masters-chrony-configuration.yaml", chronyManifest(), "user"},
		{"manifests/manifests/cluster-network-02-config.yml", "apiVersion: config.openshift.io/v1\nkind: Network\nmetadata:\n  name: cluster\nspec:\n  networkType: OVNKubernetes\n", "system"},
	}
	for _, m := range manifests {
		p := filepath.Join(c, m.path)
		if err := writeFile(p, []byte(m.body), 0o644); err != nil {
			return fileStats{}, err
		}
		if err := unix.Setxattr(p, manifestSourceXattr, []byte(m.source), 0); err != nil {
			n.xattrNote = fmt.Sprintf("this filesystem refuses user xattrs (%v): the manifests have no %s, so none is carried", err, manifestSourceXattr)
		} else {
			n.xattrs++
		}
	}

	for i, id := range n.hostIDs {
		tgz, err := hostLogs(masters[i].name, now, int64(i))
		if err != nil {
			return fileStats{}, err
		}
		if err := writeFile(filepath.Join(c, "logs", id, "logs.tar.gz"), tgz, 0o644); err != nil {
			return fileStats{}, err
		}
	}
	// Rebuildable: bundle create leaves installercache/ out by default.
	if err := writeFile(filepath.Join(n.dataDir, "installercache", "openshift-install-"+openshiftVersion), []byte("#!/bin/sh\n# cached installer binary (rebuildable, not bundled)\n"), 0o755); err != nil {
		return fileStats{}, err
	}
	return countFiles(n.dataDir, nil)
}

func writeFile(p string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, mode)
}

// countFiles counts regular files, their bytes and manifest-source xattrs
// under dir, skipping top-level directories named in skip.
func countFiles(dir string, skip map[string]bool) (fileStats, error) {
	var st fileStats
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && skip[rel] {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st.files++
		st.bytes += info.Size()
		if sz, err := unix.Getxattr(p, manifestSourceXattr, nil); err == nil && sz > 0 {
			st.xattrs++
		}
		return nil
	})
	return st, err
}

// kubeadminPassword has the installer's form: four groups of five.
func kubeadminPassword() (string, error) {
	const alphabet = "23456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"
	var b strings.Builder
	for i := 0; i < 23; i++ {
		if i%6 == 5 {
			b.WriteByte('-')
			continue
		}
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", err
		}
		b.WriteByte(alphabet[n.Int64()])
	}
	return b.String(), nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// openshiftClusterID is the cluster's OpenShift id (metadata.json and
// clusters.openshift_cluster_id).
func openshiftClusterID() string { return assisted.ScenarioUUID(clusterName + "/openshift-cluster-id") }

func pointerIgnition(port int, role string) string {
	return fmt.Sprintf(`{"ignition":{"config":{"merge":[{"source":"https://api-int.%s.%s:%d/config/%s"}]},"security":{"tls":{"certificateAuthorities":[{"source":"data:text/plain;charset=utf-8;base64,%s"}]}},"version":"3.2.0"}}`,
		clusterName, baseDomain, port, role, base64.StdEncoding.EncodeToString(randomBytes(900)))
}

// ignition is a bootstrap-like config of about size bytes: many embedded files.
func ignition(size int) string {
	type file struct {
		Path     string         `json:"path"`
		Mode     int            `json:"mode"`
		Contents map[string]any `json:"contents"`
	}
	var fs []file
	total := 0
	for i := 0; total < size; i++ {
		data := base64.StdEncoding.EncodeToString(randomBytes(3000))
		total += len(data)
		fs = append(fs, file{Path: fmt.Sprintf("/opt/openshift/manifests/%04d-manifest.yaml", i), Mode: 420,
			Contents: map[string]any{"source": "data:text/plain;charset=utf-8;base64," + data}})
	}
	b, _ := json.Marshal(map[string]any{"ignition": map[string]any{"version": "3.2.0"}, "storage": map[string]any{"files": fs}})
	return string(b)
}

func kubeconfig(clientKey string) string {
	return fmt.Sprintf(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: %[3]s
    server: https://api.%[1]s.%[2]s:6443
  name: %[1]s
contexts:
- context:
    cluster: %[1]s
    user: admin
  name: admin
current-context: admin
kind: Config
preferences: {}
users:
- name: admin
  user:
    client-certificate-data: %[3]s
    client-key-data: %[4]s
`, clusterName, baseDomain, base64.StdEncoding.EncodeToString(randomBytes(800)), clientKey)
}

func installConfig() string {
	return fmt.Sprintf(`apiVersion: v1
baseDomain: %[2]s
metadata:
  name: %[1]s
compute:
- name: worker
  replicas: 0
controlPlane:
  name: master
  replicas: 3
networking:
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  machineNetwork:
  - cidr: 192.168.111.0/24
  networkType: OVNKubernetes
  serviceNetwork:
  - 172.30.0.0/16
platform:
  baremetal:
    apiVIPs:
    - 192.168.111.5
    ingressVIPs:
    - 192.168.111.4
pullSecret: '%[3]s'
sshKey: %[4]s
`, clusterName, baseDomain, pullSecret, sshKey)
}

func chronyManifest() string {
	conf := base64.StdEncoding.EncodeToString([]byte("server 192.168.111.1 iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\nrtcsync\n"))
	return `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  labels:
    machineconfiguration.openshift.io/role: master
  name: 50-masters-chrony-configuration
spec:
  config:
    ignition:
      version: 3.2.0
    storage:
      files:
      - contents:
          source: data:text/plain;charset=utf-8;base64,` + conf + `
        mode: 420
        overwrite: true
        path: /etc/chrony.conf
`
}

// hostLogs is the logs.tar.gz a host's logs_sender uploads: journal, agent
// and installer logs.
func hostLogs(host string, now time.Time, seed int64) ([]byte, error) {
	rng := mrand.New(mrand.NewPCG(uint64(seed), 42))
	units := []string{"agent.service", "kubelet.service", "crio.service", "bootkube.service", "NetworkManager.service", "chronyd.service"}
	msgs := []string{"Started Assisted Installer Agent.", "Pulling image quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:%064x",
		"I0101 kubelet_node_status.go:%d] \"Successfully registered node\"", "level=info msg=\"Sending step reply\" request_id=%08x",
		"Writing image and ignition to disk with arguments: [install --insecure -i /opt/install-dir/master-%08x.ign /dev/sda]",
		"chronyd: Selected source 192.168.111.1 (offset %d us)", "NetworkManager: <info> device (eno1): state change: activated"}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name  string
		lines int
	}{{"journal.log", 9000}, {"agent.log", 2500}, {"installer.log", 1200}} {
		var b strings.Builder
		t := now.Add(-90 * time.Minute)
		for i := 0; i < f.lines; i++ {
			t = t.Add(time.Duration(rng.IntN(900)) * time.Millisecond)
			msg := msgs[rng.IntN(len(msgs))]
			if strings.Contains(msg, "%") {
				msg = fmt.Sprintf(msg, rng.Uint64())
			}
			fmt.Fprintf(&b, "%s %s %s[%d]: %s\n", t.Format(time.StampMicro), host, units[rng.IntN(len(units))], 1000+rng.IntN(9000), msg)
		}
		hdr := &tar.Header{Name: "logs/" + f.name, Mode: 0o644, Size: int64(b.Len()), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(b.String())); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// humanBytes is 1.2 MiB and the like, as the plugin prints sizes.
var humanBytes = files.HumanBytes
