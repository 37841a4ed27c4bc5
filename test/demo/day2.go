package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
	"github.com/kubectl-assisted/kubectl-assisted/test/synthetic"
)

// baseISOFixture names the live-ISO layout (coreos-installer's fixture of
// that name when ../shared has it, else a synthetic ISO of the same layout,
// harness.LiveISO) that stands for RHCOS in the release payload's
// machine-os-images.
const baseISOFixture = "embed-areas-2023-07.x86_64.iso"

const nodesConfig = `hosts:
- hostname: worker-0
  role: worker
  rootDeviceHints:
    deviceName: /dev/sda
  interfaces:
  - name: eno1
    macAddress: 52:54:00:ab:00:10
  networkConfig:
    interfaces:
    - name: eno1
      type: ethernet
      state: up
      mac-address: 52:54:00:ab:00:10
      ipv4:
        enabled: true
        dhcp: false
        address:
        - ip: 192.168.111.30
          prefix-length: 24
    dns-resolver:
      config:
        server: [192.168.111.1]
    routes:
      config:
      - destination: 0.0.0.0/0
        next-hop-address: 192.168.111.1
        next-hop-interface: eno1
`

// mcsCA makes a stand-in for the Machine Config Server's CA in the worker
// user-data: a real self-signed certificate, since the host's assisted-service
// refuses to import a cluster whose CA does not parse.
func mcsCA() (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{OrganizationalUnit: []string{"openshift"}, CommonName: "root-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}

// addNodes is step 5: cluster 0 as an installed cluster (its configuration
// objects, the release payload on a mirror whose machine-os-images holds the
// fixture ISO), then `add-nodes create` for one extra worker.
func (d *demo) addNodes(s *stepRun) error {
	isoPath := harness.LiveISO(d.r, baseISOFixture)
	iso, err := os.ReadFile(isoPath)
	if err != nil {
		return fmt.Errorf("base ISO like %s: %w", baseISOFixture, err)
	}
	rel := synthetic.PushRelease(d.r, synthetic.ReleaseOptions{
		Host: d.mirror.Host, ReleaseRepo: "openshift-release-dev/ocp-release", ArtRepo: "openshift-release-dev/ocp-v4.0-art-dev",
		ISOs: map[string][]byte{"x86_64": iso},
	})
	s.say("release payload %s pushed to the mirror (machine-os-images holds %s, a live ISO like %s, %s)", rel.Ref, filepath.Base(isoPath), baseISOFixture, humanBytes(int64(len(iso))))

	ca, err := mcsCA()
	if err != nil {
		return fmt.Errorf("the Machine Config Server CA: %w", err)
	}
	var nodes []synthetic.Node
	for _, m := range masters {
		nodes = append(nodes, synthetic.Node{Name: m.name, IP: m.ip, Master: true})
	}
	synthetic.SeedCluster(d.r, d.kube, synthetic.ClusterOptions{
		ClusterID: openshiftClusterID(), ReleaseImage: rel.Ref, Version: openshiftVersion, Arch: "amd64", Platform: "BareMetal",
		APIURL: fmt.Sprintf("https://api.%s.%s:6443", clusterName, baseDomain), PullSecret: pullSecret, SSHKey: sshKey,
		Chrony: "server 192.168.111.1 iburst\n", MCSURL: fmt.Sprintf("https://api-int.%s.%s:22623/config/worker", clusterName, baseDomain),
		MCSCA: ca, Nodes: nodes,
	})
	s.say("cluster 0 as installed: ClusterVersion %s, Infrastructure, pull secret, MachineConfigs, worker user-data, 3 master Nodes", openshiftVersion)

	dir := d.path("day2")
	out := filepath.Join(dir, "out")
	if err := mkdirs(out); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "nodes-config.yaml")
	if err := os.WriteFile(cfg, []byte(nodesConfig), 0o644); err != nil {
		return err
	}
	s.say("nodes-config.yaml: %s (worker-0, 192.168.111.30, static)", cfg)
	res, err := d.assisted(s, "add-nodes", "create", "--kubeconfig", d.kubeconfig, "-f", cfg, "--dir", out, "--plain-http", "--checksum", "-o", "json")
	if err != nil {
		return err
	}
	var created struct {
		Artifacts []struct {
			Kind, Path, SHA256 string
			Size               int64
		}
		BaseISO        string    `json:"baseISO"`
		TokenExpiresAt time.Time `json:"tokenExpiresAt"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &created); err != nil {
		return fmt.Errorf("add-nodes create -o json: %w", err)
	}
	for _, a := range created.Artifacts {
		if a.Kind != "iso" {
			continue
		}
		fi, err := os.Stat(a.Path)
		if err != nil {
			return fmt.Errorf("the ISO add-nodes create reported: %w", err)
		}
		d.sum.ISO = ISOResult{Path: a.Path, Size: fi.Size(), SHA256: a.SHA256, Exists: true}
		s.say("ISO %s: %s, sha256 %s", a.Path, humanBytes(fi.Size()), a.SHA256)
		s.say("base ISO from %s; the ISO's agent token is valid until %s", created.BaseISO, created.TokenExpiresAt.UTC().Format(time.RFC3339))
		return nil
	}
	return fmt.Errorf("add-nodes create reported no ISO: %s", tail(res.Stdout, 10))
}
