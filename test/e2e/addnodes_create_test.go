package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
	"github.com/kubectl-assisted/kubectl-assisted/test/synthetic"
)

const (
	testClusterID  = "2a6e1b36-6fb5-4c5f-9f4e-3c0c1e8d2f10"
	testAPIURL     = "https://api.ostest.test.metalkube.org:6443"
	testMCSURL     = "https://api-int.ostest.test.metalkube.org:22623/config/worker"
	testSSHKey     = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINv7Ht9SxKXmZUEWuEHtjSV3AOltssPYDNqyxEbrJIoQ kat@cluster"
	testChrony     = "server 192.168.111.1 iburst\ndriftfile /var/lib/chrony/drift\n"
	pullSecretPass = "PULL-SECRET-SENTINEL-9f8e7d"
	sourceHost     = "quay.example.invalid" // never resolves: only the mirror serves it
	// Real certificates and key: the on-host service parses them.
	testCA    = "-----BEGIN CERTIFICATE-----\nMIIBpjCCAU2gAwIBAgIUQDx0V8/C14pdpggl3MiG93c2gBMwCgYIKoZIzj0EAwIw\nKDEmMCQGA1UEAwwda3ViZWN0bC1hc3Npc3RlZC10ZXN0LXVzZXItY2EwIBcNMjYx\nMjAyMDIxOTU1WhgPMjEyNjExMDgwMjE5NTVaMCgxJjAkBgNVBAMMHWt1YmVjdGwt\nYXNzaXN0ZWQtdGVzdC11c2VyLWNhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\nuiqIfb64W4gVhgYmCQcpIsiBN5+jQCW9mxDlvSmAQH3iOX86spW49gORwFwWxuoF\nNUliwfi0cAHNb5xXkDPn4aNTMFEwHQYDVR0OBBYEFKze7D67K1Gw5LBb1GzSh3jZ\n4HiCMB8GA1UdIwQYMBaAFKze7D67K1Gw5LBb1GzSh3jZ4HiCMA8GA1UdEwEB/wQF\nMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgbcw7fHlTPKIFRvJkx/seZp/F58f91KiJ\nM2Ei9YvzVG4CIExE3WpGnG6b7Hr0rjA5U5rFOHFqfYh/prvo05Run2Ab\n-----END CERTIFICATE-----\n"
	testMCSCA = "-----BEGIN CERTIFICATE-----\nMIIBpTCCAUugAwIBAgIUI4y9m1h6tDYLgfJoJlDTm/OXBjwwCgYIKoZIzj0EAwIw\nJzElMCMGA1UEAwwca3ViZWN0bC1hc3Npc3RlZC10ZXN0LW1jcy1jYTAgFw0yNjEy\nMDIwMjE5NTVaGA8yMTI2MTEwODAyMTk1NVowJzElMCMGA1UEAwwca3ViZWN0bC1h\nc3Npc3RlZC10ZXN0LW1jcy1jYTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABAds\nKUIYKCysQGg0vYJ+wF+PffBlLF/wkiB2CkM145q5renKqeUAk51CxynwJrwnt9gU\no4tl6vZjRGsUzZecFeWjUzBRMB0GA1UdDgQWBBTjgCV9wxZAXkRvJ92/mDeo1TaX\nvDAfBgNVHSMEGDAWgBTjgCV9wxZAXkRvJ92/mDeo1TaXvDAPBgNVHRMBAf8EBTAD\nAQH/MAoGCCqGSM49BAMCA0gAMEUCIExIDcwFtAkVu4DdQhQPr8yKPFA/8xVtIPSe\n/F8ae47iAiEA7VVsZIxTPhvH1/cvVxymG0AwTCwsjJrzZ+dRYIc9xBk=\n-----END CERTIFICATE-----\n"
)

// day2Env is a seeded cluster plus a registry holding its release payload.
type day2Env struct {
	kube    *harness.Kube
	reg     *harness.Registry
	release *synthetic.Release
	plugin  *harness.Plugin
	opts    synthetic.ClusterOptions
}

// newDay2Env pushes a payload whose references name sourceHost, served only
// through the cluster's IDMS mirror on the local registry, and seeds the
// cluster's objects. isos maps RPM architectures to the ISO machine-os-images
// carries.
func newDay2Env(t *testing.T, isos map[string][]byte, mutate func(*synthetic.ClusterOptions)) *day2Env {
	t.Helper()
	requireISOTools(t)
	k := harness.SharedKube(t)
	reg := harness.StartInProcessRegistry(t)
	rel := synthetic.PushRelease(t, synthetic.ReleaseOptions{Host: reg.Host, ReleaseRepo: "ocp/release", ArtRepo: "ocp/art-dev", ISOs: isos, RefHost: sourceHost})
	ps, _ := json.Marshal(map[string]any{"auths": map[string]any{
		sourceHost: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("kat:" + pullSecretPass))},
	}})
	o := synthetic.ClusterOptions{
		ClusterID: testClusterID, ReleaseImage: rel.Ref, Version: "4.17.3", Arch: "amd64", Platform: "BareMetal",
		APIURL: testAPIURL, PullSecret: string(ps), CABundle: testCA,
		Proxy:   map[string]any{"httpProxy": "http://proxy.test:3128", "httpsProxy": "http://proxy.test:3128", "noProxy": ".cluster.local,192.168.111.0/24"},
		Mirrors: []synthetic.Mirror{{Source: sourceHost + "/ocp", Mirrors: []string{reg.Host + "/ocp"}}},
		SSHKey:  testSSHKey, Chrony: testChrony, MCSURL: testMCSURL, MCSCA: testMCSCA,
		Nodes: []synthetic.Node{
			{Name: "ostest-master-0", IP: "192.168.111.20", Master: true},
			{Name: "ostest-master-1", IP: "192.168.111.21", Master: true},
			{Name: "ostest-worker-0", IP: "192.168.111.23"},
		},
	}
	if mutate != nil {
		mutate(&o)
	}
	synthetic.SeedCluster(t, k, o)
	return &day2Env{kube: k, reg: reg, release: rel, plugin: harness.NewPlugin(t), opts: o}
}

func (e *day2Env) create(t *testing.T, args ...string) harness.Result {
	t.Helper()
	all := append([]string{"add-nodes", "create", "--kubeconfig", e.kube.Kubeconfig, "--plain-http"}, args...)
	return e.plugin.Run(t, all...)
}

type createResult struct {
	Kind      string `json:"kind"`
	Cluster   struct{ ID, Name, Version, Platform string }
	Artifacts []struct {
		Kind, Path, SHA256 string
		Size               int64
	}
	Architecture    string    `json:"architecture"`
	FIPS            bool      `json:"fips"`
	TokenExpiresAt  time.Time `json:"tokenExpiresAt"`
	TokenReused     bool      `json:"tokenReused"`
	BaseISO         string    `json:"baseISO"`
	KernelArguments string    `json:"kernelArguments"`
	Warnings        []string  `json:"warnings"`
}

func decodeResult(t *testing.T, r harness.Result) createResult {
	t.Helper()
	if r.ExitCode != 0 {
		t.Fatalf("add-nodes create: exit %d\n%s", r.ExitCode, r.Combined())
	}
	var res createResult
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.Stdout)
	}
	return res
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const twoHosts = `hosts:
- hostname: extra-worker-0
  role: worker
  rootDeviceHints:
    deviceName: /dev/sda
  interfaces:
  - name: eth0
    macAddress: 00:F4:3D:A0:0E:2B
  networkConfig:
    interfaces:
    - name: eth0
      type: ethernet
      state: up
      mac-address: 00:f4:3d:a0:0e:2b
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
        next-hop-interface: eth0
- hostname: extra-worker-1
  rootDeviceHints:
    serialNumber: S4X1NE0M
  interfaces:
  - name: eno1
    macAddress: 00:f4:3d:a0:0e:2c
`

func TestAddNodesCreate_ISOFromReleasePayloadThroughMirror(t *testing.T) {
	base := fixtureISO(t, "embed-areas-2023-07.x86_64.iso")
	baseBytes, _ := os.ReadFile(base)
	e := newDay2Env(t, map[string][]byte{"x86_64": baseBytes}, nil)
	cfgFile := writeFile(t, "nodes-config.yaml", twoHosts)
	out := filepath.Join(t.TempDir(), "out")

	before := time.Now()
	r := e.create(t, "-f", cfgFile, "--dir", out, "-o", "json", "--checksum")
	res := decodeResult(t, r)
	after := time.Now()

	isoPath := filepath.Join(out, "node.x86_64.iso")
	if len(res.Artifacts) != 1 || res.Artifacts[0].Path != isoPath || res.Artifacts[0].Kind != "iso" {
		t.Fatalf("artifacts = %+v", res.Artifacts)
	}
	got, err := os.ReadFile(isoPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(got)
	if res.Artifacts[0].Size != int64(len(baseBytes)) || int64(len(got)) != res.Artifacts[0].Size || res.Artifacts[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("artifact size/sha256 %d/%s, file %d/%x, base %d", res.Artifacts[0].Size, res.Artifacts[0].SHA256, len(got), sum, len(baseBytes))
	}
	if res.Cluster.ID != testClusterID || res.Cluster.Name != "ostest" || res.Architecture != "x86_64" || res.Cluster.Platform != "baremetal" {
		t.Fatalf("result = %+v", res)
	}
	if !strings.HasPrefix(res.BaseISO, e.reg.Host+"/ocp/art-dev@") {
		t.Fatalf("base ISO read from %q, want the mirror %s", res.BaseISO, e.reg.Host)
	}
	if res.TokenReused || res.TokenExpiresAt.Before(before.Add(48*time.Hour).Add(-time.Second)) || res.TokenExpiresAt.After(after.Add(48*time.Hour)) {
		t.Fatalf("token: reused=%v expires %v (want a new token ~48h after %v)", res.TokenReused, res.TokenExpiresAt, before)
	}
	for _, s := range []string{r.Stdout, r.Stderr} {
		if strings.Contains(s, pullSecretPass) || strings.Contains(s, base64.StdEncoding.EncodeToString([]byte("kat:"+pullSecretPass))) {
			t.Fatal("pull secret leaked into the command's output")
		}
	}

	raw, members, compression := embeddedIgnition(t, isoPath)
	if compression != "xz" || len(members) != 1 {
		t.Fatalf("embed area: %s archive with %v", compression, members)
	}
	validateIgnition(t, raw)
	c := parseIgn(t, raw)
	if c.Ignition.Version != "3.4.0" {
		t.Fatalf("ignition version %q", c.Ignition.Version)
	}
	enabled := map[string]bool{}
	for _, u := range c.Systemd.Units {
		enabled[u.Name] = u.Enabled != nil && *u.Enabled && u.Contents != ""
	}
	for _, u := range []string{"assisted-service-pod.service", "assisted-service-db.service", "assisted-service.service", "agent-import-cluster.service",
		"agent-register-infraenv.service", "agent.service", "apply-host-config.service", "agent-add-node.service", "set-hostname.service",
		"pre-network-manager-config.service", "agent-auth-token-status.service"} {
		if !enabled[u] {
			t.Errorf("unit %s missing or not enabled", u)
		}
	}
	images := env(c.mustFile(t, "/usr/local/share/assisted-service/agent-images.env"))
	for key, name := range map[string]string{"SERVICE_IMAGE": "agent-installer-api-server", "AGENT_DOCKER_IMAGE": "agent-installer-node-agent",
		"INSTALLER_IMAGE": "agent-installer-orchestrator", "CONTROLLER_IMAGE": "agent-installer-csr-approver"} {
		if images[key] != e.release.Images[name] || !strings.HasPrefix(images[key], sourceHost+"/ocp/art-dev@sha256:") {
			t.Errorf("%s = %q, want image-references' %s = %q", key, images[key], name, e.release.Images[name])
		}
	}
	if images["RELEASE_IMAGE"] != e.release.Ref || images["OPENSHIFT_INSTALL_RELEASE_IMAGE_MIRROR"] != e.reg.Host+"/ocp/release@"+e.release.Digest {
		t.Errorf("release image %q, mirror %q", images["RELEASE_IMAGE"], images["OPENSHIFT_INSTALL_RELEASE_IMAGE_MIRROR"])
	}
	an := env(c.mustFile(t, "/etc/assisted/add-nodes.env"))
	if an["CLUSTER_ID"] != testClusterID || an["CLUSTER_NAME"] != "ostest" || an["CLUSTER_API_VIP_DNS_NAME"] != "api.ostest.test.metalkube.org" ||
		an["AUTH_TOKEN_EXPIRY"] != res.TokenExpiresAt.UTC().Format(time.RFC3339) {
		t.Errorf("add-nodes.env = %v", an)
	}
	if rv := env(c.mustFile(t, "/etc/assisted/rendezvous-host.env")); rv["WORKFLOW_TYPE"] != "addnodes" || rv["NODE_ZERO_IP"] != "127.0.0.1" {
		t.Errorf("rendezvous-host.env = %v", rv)
	}
	// Per-MAC host configuration.
	if s := c.mustFile(t, "/etc/assisted/hostconfig/extra-worker-0/mac_addresses"); s != "00:f4:3d:a0:0e:2b\n" {
		t.Errorf("mac_addresses = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/hostconfig/extra-worker-0/root-device-hints.yaml"); !strings.Contains(s, "deviceName: /dev/sda") {
		t.Errorf("root-device-hints.yaml = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/hostconfig/extra-worker-1/root-device-hints.yaml"); !strings.Contains(s, "serialNumber: S4X1NE0M") {
		t.Errorf("root-device-hints.yaml = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/hostconfig/extra-worker-1/role"); s != "worker\n" {
		t.Errorf("role = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/hostnames/00:f4:3d:a0:0e:2c"); s != "extra-worker-1\n" {
		t.Errorf("hostname file = %q", s)
	}
	// The nmstate is turned into NetworkManager keyfiles at build time, with
	// libnmstate's values (a route without metric: metric 0, table 254 in
	// routeN_options; mac-address: the MAC the interface takes).
	if s := c.mustFile(t, "/etc/assisted/network/extra-worker-0/eth0.nmconnection"); !strings.Contains(s, "interface-name=eth0\n") ||
		!strings.Contains(s, "address1=192.168.111.30/24\n") || !strings.Contains(s, "dns=192.168.111.1;\n") ||
		!strings.Contains(s, "route1=0.0.0.0/0,192.168.111.1,0\nroute1_options=table=254\n") || !strings.Contains(s, "cloned-mac-address=00:F4:3D:A0:0E:2B\n") {
		t.Errorf("eth0.nmconnection = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/network/extra-worker-0/mac_interface.ini"); s != "00:f4:3d:a0:0e:2b=eth0\n" {
		t.Errorf("mac_interface.ini = %q", s)
	}
	if _, ok := c.file(t, "/etc/assisted/network/extra-worker-1/mac_interface.ini"); ok {
		t.Error("DHCP host got a static network configuration")
	}
	if s := c.mustFile(t, "/etc/assisted/manifests/nmstateconfig.yaml"); !strings.Contains(s, "kind: NMStateConfig") || !strings.Contains(s, "macAddress: 00:f4:3d:a0:0e:2b") {
		t.Errorf("nmstateconfig.yaml = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/manifests/infraenv.yaml"); !strings.Contains(s, "httpProxy: http://proxy.test:3128") || !strings.Contains(s, "cpuArchitecture: x86_64") {
		t.Errorf("infraenv.yaml = %q", s)
	}
	if s := c.mustFile(t, "/etc/assisted/manifests/cluster-image-set.yaml"); !strings.Contains(s, "releaseImage: "+e.release.Ref) {
		t.Errorf("cluster-image-set.yaml = %q", s)
	}
	// Cluster-wide settings.
	if s := c.mustFile(t, "/etc/containers/registries.conf"); !strings.Contains(s, `location = "`+sourceHost+`/ocp"`) || !strings.Contains(s, `location = "`+e.reg.Host+`/ocp"`) || !strings.Contains(s, "mirror-by-digest-only = true") {
		t.Errorf("registries.conf = %q", s)
	}
	if s := c.mustFile(t, "/etc/chrony.conf"); s != testChrony {
		t.Errorf("chrony.conf = %q", s)
	}
	if s := c.mustFile(t, "/etc/pki/ca-trust/source/anchors/user-ca-bundle.pem"); s != testCA {
		t.Errorf("CA bundle = %q", s)
	}
	if s := c.mustFile(t, "/etc/systemd/system.conf.d/10-default-env.conf"); !strings.Contains(s, "HTTPS_PROXY=http://proxy.test:3128") || !strings.Contains(s, "NO_PROXY=.cluster.local,192.168.111.0/24") {
		t.Errorf("proxy drop-in = %q", s)
	}
	var ep struct{ URL, CACertificate string }
	_ = json.Unmarshal([]byte(c.mustFile(t, "/etc/assisted/clusterconfig/worker-ignition-endpoint.json")), &struct {
		URL *string `json:"url"`
		CA  *string `json:"ca_certificate"`
	}{&ep.URL, &ep.CACertificate})
	// ca_certificate stays base64 (assisted-service wraps it as a data URL;
	// the agent base64-decodes it): release-4.19 cmd/agentbasedinstaller/import.go,
	// internal/host/hostcommands/api_vip_connectivity_check_cmd.go.
	if ep.URL != "https://api-int.ostest.test.metalkube.org:22623/config" || ep.CACertificate != base64.StdEncoding.EncodeToString([]byte(testMCSCA)) {
		t.Errorf("worker-ignition-endpoint.json = %+v", ep)
	}
	if s := c.mustFile(t, "/etc/assisted/clusterconfig/import-cluster-config.json"); s != `{"networking":{"userManagedNetworking":false}}` {
		t.Errorf("import-cluster-config.json = %q", s)
	}
	if len(c.Passwd.Users) != 1 || c.Passwd.Users[0].Name != "core" || len(c.Passwd.Users[0].SSHAuthorizedKeys) != 1 || c.Passwd.Users[0].SSHAuthorizedKeys[0] != testSSHKey {
		t.Errorf("passwd = %+v", c.Passwd)
	}
	for _, secretFile := range []string{"/root/.docker/config.json", "/usr/local/share/assisted-service/assisted-service.env", "/etc/assisted/manifests/pull-secret.yaml"} {
		if m := c.mode(secretFile); m != 0o600 {
			t.Errorf("%s mode %o, want 0600", secretFile, m)
		}
	}
	// The token in the ISO is the one stored in the cluster.
	sec, err := e.kube.Clientset(t).CoreV1().Secrets("openshift-config").Get(context.Background(), "agent-auth-token", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("agent-auth-token secret: %v", err)
	}
	svc := env(c.mustFile(t, "/usr/local/share/assisted-service/assisted-service.env"))
	if svc["AGENT_AUTH_TOKEN"] != string(sec.Data["agentAuthToken"]) || svc["EC_PUBLIC_KEY_PEM"] != string(sec.Data["authTokenPublicKey"]) || svc["AUTH_TYPE"] != "agent-installer-local" {
		t.Errorf("assisted-service.env token/key do not match the cluster's secret")
	}
	// 4.17 (this fixture's version): one token with claims {infra_env_id, exp},
	// the infra_env_id the ISO's INFRA_ENV_ID (assisted-service release-4.17
	// pkg/auth/agent_local_authenticator.go requires the claim); no 4.18 keys.
	claims, err := authtoken.Verify(svc["AGENT_AUTH_TOKEN"], svc["EC_PUBLIC_KEY_PEM"])
	if err != nil || claims.AuthScheme != "" || claims.InfraEnvID == "" || claims.InfraEnvID != svc["INFRA_ENV_ID"] || svc["USER_AUTH_TOKEN"] != svc["AGENT_AUTH_TOKEN"] {
		t.Errorf("4.17 token: claims %+v, err %v", claims, err)
	}
	if _, ok := sec.Data["userAuthToken"]; ok {
		t.Errorf("a 4.17 build stored a userAuthToken")
	}
	if sec.Annotations["expiresAt"] != res.TokenExpiresAt.UTC().Format(time.RFC3339) {
		t.Errorf("secret expiresAt %q, result %v", sec.Annotations["expiresAt"], res.TokenExpiresAt)
	}

	// A second build within the day reuses the token.
	out2 := filepath.Join(t.TempDir(), "out2")
	res2 := decodeResult(t, e.create(t, "-f", cfgFile, "--dir", out2, "-o", "json"))
	if !res2.TokenReused || !res2.TokenExpiresAt.Equal(res.TokenExpiresAt) {
		t.Fatalf("second build: reused=%v expires %v, want the first token (%v)", res2.TokenReused, res2.TokenExpiresAt, res.TokenExpiresAt)
	}
	// The human form says until when the ISO is valid.
	h := e.create(t, "-f", cfgFile, "--dir", out2)
	if h.ExitCode != 0 || !strings.Contains(h.Stdout, "The ISO is valid until "+res.TokenExpiresAt.UTC().Format(time.RFC3339)) {
		t.Fatalf("human output:\n%s", h.Combined())
	}
}
