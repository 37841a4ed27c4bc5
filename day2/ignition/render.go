// Package ignition renders the Ignition 3.4 config of a day-2 node ISO: the
// booted live system runs its own assisted-service and agent in add-nodes mode
// (every new node is its own "node zero" at 127.0.0.1), imports the existing
// cluster, applies the per-MAC host configuration, and installs the host with a
// pointer to the cluster's Machine Config Server.
package ignition

import (
	"crypto/x509"
	"regexp"
	"sync"

	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/crypto/ssh"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/coreos/ignition/v2/config/v3_4/types"

	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
	"github.com/kubectl-assisted/kubectl-assisted/day2/release"
)

// Version is the Ignition spec the config uses (RHCOS for OpenShift 4.14+).
const Version = "3.4.0"

// Paths on the booted host that other tools (and tests) rely on.
const (
	AddNodesEnv        = "/etc/assisted/add-nodes.env"
	RendezvousEnv      = "/etc/assisted/rendezvous-host.env"
	AgentImagesEnv     = "/usr/local/share/assisted-service/agent-images.env"
	ServiceEnv         = "/usr/local/share/assisted-service/assisted-service.env"
	DBEnv              = "/usr/local/share/assisted-service/assisted-db.env"
	ManifestsDir       = "/etc/assisted/manifests"
	ClusterConfigDir   = "/etc/assisted/clusterconfig"
	HostConfigDir      = "/etc/assisted/hostconfig"
	HostnamesDir       = "/etc/assisted/hostnames"
	NetworkDir         = "/etc/assisted/network"
	RegistriesConfPath = "/etc/containers/registries.conf"
	CABundlePath       = "/etc/pki/ca-trust/source/anchors/user-ca-bundle.pem"
	TrustBundlePath    = "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"
	ChronyConfPath     = "/etc/chrony.conf"
	ProxyDropIn        = "/etc/systemd/system.conf.d/10-default-env.conf"
	PullSecretPath     = "/root/.docker/config.json"
	ZTPNamespace       = "cluster0"
	serviceBaseURL     = "http://127.0.0.1:8090/"
	imageServiceURL    = "http://127.0.0.1:8888/"
	nodeZeroIP         = "127.0.0.1"
	workflowAddNodes   = "addnodes"
	installerInvoker   = "agent-installer"
	authTypeLocalAuth  = "agent-installer-local"
)

// Input is everything the config is made of.
type Input struct {
	Cluster *clusterinfo.Info
	Nodes   *nodesconfig.Config
	// Arch is the RPM architecture of the ISO.
	Arch string
	// Payload is the resolved release payload (image digests).
	Payload *release.Payload
	// Profile is the cluster version's profile (see ProfileFor).
	Profile Profile
	Token   *authtoken.Set
	// InfraEnvID is the id the on-host service gives the infra-env, which
	// apply-host-config and the agent use. Empty: the token's infra_env_id.
	InfraEnvID string
	// DBPassword is the password of the ephemeral database on the host.
	DBPassword string
}

// Render builds the config.
func Render(in Input) (*types.Config, error) {
	if in.Cluster == nil || in.Nodes == nil || in.Payload == nil || in.Token == nil {
		return nil, errors.New("ignition: cluster, nodes, payload and token are required")
	}
	if in.Profile.Tokens == 0 {
		return nil, errors.New("ignition: the version profile is required")
	}
	if in.Token.Kind != in.Profile.Tokens {
		return nil, fmt.Errorf("ignition: token kind %v does not suit OpenShift 4.%d (%v)", in.Token.Kind, in.Profile.Minor, in.Profile.Tokens)
	}
	if in.InfraEnvID == "" {
		in.InfraEnvID = in.Token.InfraEnvID
	}
	if in.InfraEnvID == "" {
		return nil, errors.New("ignition: no infra-env id")
	}
	b := &builder{}
	sshKey := strings.TrimSpace(in.Nodes.SSHKey)
	if sshKey == "" {
		sshKey = strings.TrimSpace(in.Cluster.SSHKey)
	}
	if err := serviceAcceptsSSHKey(sshKey, in.Nodes.SSHKey != ""); err != nil {
		return nil, err
	}
	if ep := in.Cluster.IgnitionEndpoint; ep != nil && ep.CACertificate != "" {
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(ep.CACertificate)) {
			return nil, errors.New("the Machine Config Server CA read from the cluster holds no PEM certificate: the host's cluster import would fail (assisted-service answers \"unable to parse certificate\"); check the cluster's machine-config-server CA")
		}
	}
	cfg := &types.Config{Ignition: types.Ignition{Version: Version}}
	if sshKey != "" {
		cfg.Passwd.Users = []types.PasswdUser{{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{types.SSHAuthorizedKey(sshKey)}}}
	}
	if err := b.environment(in); err != nil {
		return nil, err
	}
	if err := b.manifests(in, sshKey); err != nil {
		return nil, err
	}
	if err := b.hosts(in); err != nil {
		return nil, err
	}
	b.system(in)
	b.units(in)
	sort.Slice(b.files, func(i, j int) bool { return b.files[i].Path < b.files[j].Path })
	cfg.Storage.Files = b.files
	cfg.Systemd.Units = b.unitList
	return cfg, nil
}

// serviceSSHKeyRE is the key types the on-host assisted-service accepts for
// the infra-env's sshAuthorizedKey (assisted-service release-4.17..4.20
// internal/cluster/validations/validations.go, sshPublicKeyRegex and
// ValidateSSHPublicKey: every line must match and parse); anything else makes
// registerInfraEnv fail at boot with "SSH key is not valid".
var serviceSSHKeyRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(ssh-rsa AAAAB3NzaC1yc2|ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNT|ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzOD|ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1Mj|ssh-ed25519 AAAAC3NzaC1lZDI1NTE5|ssh-dss AAAAB3NzaC1kc3)[0-9A-Za-z+/]+[=]{0,3}( .*)?$`)
})

func serviceAcceptsSSHKey(key string, fromNodesConfig bool) error {
	if key == "" {
		return nil
	}
	src := `the cluster's SSH key (MachineConfig 99-worker-ssh)`
	if fromNodesConfig {
		src = "sshKey of nodes-config.yaml"
	}
	for _, line := range strings.Split(key, "\n") {
		line = strings.TrimSpace(line)
		_, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if !serviceSSHKeyRE().MatchString(line) || err != nil {
			return fmt.Errorf("%s is not accepted by the host's assisted-service (it takes ssh-rsa, ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-dss keys), so the host could not register: set sshKey in nodes-config.yaml to such a key", src)
		}
	}
	return nil
}

// Marshal renders and encodes the config as JSON.
func Marshal(in Input) ([]byte, error) {
	cfg, err := Render(in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(cfg)
}

type builder struct {
	files    []types.File
	unitList []types.Unit
}

func (b *builder) file(p string, mode int, content []byte) {
	src := "data:;base64," + base64.StdEncoding.EncodeToString(content)
	root := "root"
	overwrite := true
	b.files = append(b.files, types.File{
		Node:          types.Node{Path: p, Overwrite: &overwrite, User: types.NodeUser{Name: &root}, Group: types.NodeGroup{Name: &root}},
		FileEmbedded1: types.FileEmbedded1{Mode: &mode, Contents: types.Resource{Source: &src}},
	})
}

func (b *builder) unit(name, contents string, enabled bool) {
	u := types.Unit{Name: name}
	if contents != "" {
		c := contents
		u.Contents = &c
	}
	if enabled {
		t := true
		u.Enabled = &t
	}
	b.unitList = append(b.unitList, u)
}

// envFile renders KEY=value lines in the given order.
func envFile(kv ...string) []byte {
	var s strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&s, "%s=%s\n", kv[i], kv[i+1])
	}
	return []byte(s.String())
}

// HWRequirements is the HW_VALIDATOR_REQUIREMENTS the on-host service gets:
// without it assisted-service has no requirements for the version ("requirements
// for version ... not found") and the host never leaves discovering. The
// values are the installer's defaults (data/data/agent/files/usr/local/share/
// assisted-service/default_hw_requirements.json, and the same numbers in
// data/data/agent/files/usr/local/bin/configure-assisted-hw-requirements.sh).
const HWRequirements = `[{"version":"default","master":{"cpu_cores":4,"ram_mib":16384,"disk_size_gb":100,"installation_disk_speed_threshold_ms":10,"network_latency_threshold_ms":100,"packet_loss_percentage":0},"arbiter":{"cpu_cores":2,"ram_mib":8192,"disk_size_gb":50,"installation_disk_speed_threshold_ms":10,"network_latency_threshold_ms":1000,"packet_loss_percentage":0},"worker":{"cpu_cores":2,"ram_mib":8192,"disk_size_gb":100,"installation_disk_speed_threshold_ms":10,"network_latency_threshold_ms":1000,"packet_loss_percentage":10},"sno":{"cpu_cores":8,"ram_mib":16384,"disk_size_gb":100,"installation_disk_speed_threshold_ms":10}}]`

func (b *builder) environment(in Input) error {
	c := in.Cluster
	tok := in.Token
	b.file(AddNodesEnv, 0o644, envFile(
		"CLUSTER_ID", c.ClusterID,
		"CLUSTER_NAME", c.ClusterName,
		"CLUSTER_API_VIP_DNS_NAME", c.APIDNSName,
		"AUTH_TOKEN_EXPIRY", tok.ExpiresAt.UTC().Format(time.RFC3339),
	))
	rv := []string{
		"NODE_ZERO_IP", nodeZeroIP,
		"SERVICE_BASE_URL", serviceBaseURL,
		"IMAGE_SERVICE_BASE_URL", imageServiceURL,
		"WORKFLOW_TYPE", workflowAddNodes,
	}
	if in.Profile.TokenInRendezvousEnv {
		rv = append(rv, "USER_AUTH_TOKEN", tok.User)
	}
	// Holds a token: root only (the installer's is 0644).
	b.file(RendezvousEnv, 0o600, envFile(rv...))
	// The marker the import unit waits for: this host is its own node zero.
	b.file("/etc/assisted/node0", 0o644, envFile("NODE_ZERO", "true"))
	img := in.Payload.Images
	mirror := ReleaseMirror(c.ReleaseImage, c.ImageDigestSources)
	b.file(AgentImagesEnv, 0o644, envFile(
		"SERVICE_IMAGE", img[release.ImageAssistedService],
		"AGENT_DOCKER_IMAGE", img[release.ImageAgent],
		"INSTALLER_IMAGE", img[release.ImageInstaller],
		"CONTROLLER_IMAGE", img[release.ImageController],
		"AGENT_UTILS_IMAGE", img[release.ImageUtils],
		"RELEASE_IMAGE", c.ReleaseImage,
		"OPENSHIFT_INSTALL_RELEASE_IMAGE_MIRROR", mirror,
	))
	versions, err := json.Marshal([]map[string]any{{
		"openshift_version": majorMinor(c.Version), "cpu_architecture": in.Arch, "url": c.ReleaseImage, "version": c.Version,
	}})
	if err != nil {
		return err
	}
	// The service refuses to start unless every OS image has a url and a
	// version ("Missing value in OSImage for 'url' field", assisted-service
	// internal/versions/osimages.go, release-4.17 .. master). A day-2 host
	// never downloads it (it already booted), so when coreos-bootimages could
	// not be read a stand-in that says so is enough.
	osURL, osVersion := osImageStandIn, c.Version
	if c.OSImage != nil {
		if c.OSImage.Location != "" {
			osURL = c.OSImage.Location
		}
		if c.OSImage.Release != "" {
			osVersion = c.OSImage.Release
		}
	}
	osImages := []map[string]any{{"openshift_version": majorMinor(c.Version), "cpu_architecture": in.Arch, "url": osURL, "version": osVersion}}
	osJSON, err := json.Marshal(osImages)
	if err != nil {
		return err
	}
	kv := []string{
		"AUTH_TYPE", authTypeLocalAuth,
		"EC_PUBLIC_KEY_PEM", tok.PublicKey,
		// 4.17's agent-installer-client reads AGENT_AUTH_TOKEN, 4.18+'s
		// USER_AUTH_TOKEN; the agent unit passes AGENT_AUTH_TOKEN to the
		// agent as PULL_SECRET_TOKEN.
		"AGENT_AUTH_TOKEN", tok.Agent,
		"USER_AUTH_TOKEN", tok.User,
	}
	if in.Profile.Tokens == authtoken.KindPerScheme {
		kv = append(kv, "WATCHER_AUTH_TOKEN", tok.Watcher)
	}
	kv = append(kv,
		"INFRA_ENV_ID", in.InfraEnvID,
		"HW_VALIDATOR_REQUIREMENTS", HWRequirements,
		"PUBLIC_CONTAINER_REGISTRIES", publicRegistries(in),
		"DEPLOY_TARGET", "onprem",
		"STORAGE", "filesystem",
		"INSTALL_INVOKER", installerInvoker,
		"SERVICE_BASE_URL", serviceBaseURL,
		"IMAGE_SERVICE_BASE_URL", imageServiceURL,
		"DB_HOST", "127.0.0.1",
		"DB_PORT", "5432",
		"DB_USER", "admin",
		"DB_PASS", in.DBPassword,
		"DB_NAME", "installer",
		"RELEASE_IMAGES", string(versions),
		"OS_IMAGES", string(osJSON),
		"OPENSHIFT_INSTALL_RELEASE_IMAGE_MIRROR", mirror,
		"IPV6_SUPPORT", "true",
		"DISK_ENCRYPTION_SUPPORT", "true",
		"ENABLE_SINGLE_NODE_DNSMASQ", "false",
	)
	// Holds the tokens, the public key and the DB password: root only.
	b.file(ServiceEnv, 0o600, envFile(kv...))
	b.file(DBEnv, 0o600, envFile(
		"POSTGRESQL_DATABASE", "installer",
		"POSTGRESQL_USER", "admin",
		"POSTGRESQL_PASSWORD", in.DBPassword,
	))
	imp, _ := json.Marshal(map[string]any{"networking": map[string]any{"userManagedNetworking": c.UserManagedNetworking()}})
	b.file(path.Join(ClusterConfigDir, "import-cluster-config.json"), 0o644, imp)
	if ep := c.IgnitionEndpoint; ep != nil && ep.URL != "" {
		// ca_certificate stays base64, as in the worker pointer's data URL:
		// assisted-service wraps it as "data:text/plain;base64,<it>" and the
		// agent base64-decodes it for the ignition download check.
		ign := map[string]string{"url": mcsBase(ep.URL)}
		if ep.CACertificate != "" {
			ign["ca_certificate"] = base64.StdEncoding.EncodeToString([]byte(ep.CACertificate))
		}
		body, _ := json.Marshal(ign)
		b.file(path.Join(ClusterConfigDir, "worker-ignition-endpoint.json"), 0o644, body)
	}
	return nil
}

// publicRegistries lists the registries of every image the host pulls (the
// release, its mirror, the payload's images, the cluster's mirrors), so that
// assisted-service does not insist the pull secret holds credentials for
// them: the host pulls with /root/.docker/config.json, which is the cluster's
// pull secret, and a mirror that needs none must not fail registration.
func publicRegistries(in Input) string {
	set := map[string]bool{}
	add := func(ref string) {
		if ref == "" {
			return
		}
		host, _, _ := strings.Cut(ref, "/")
		if strings.ContainsAny(host, ".:") || host == "localhost" {
			set[host] = true
		}
	}
	add(in.Cluster.ReleaseImage)
	add(in.Payload.Ref)
	for _, img := range in.Payload.Images {
		add(img)
	}
	for _, s := range in.Cluster.ImageDigestSources {
		for _, m := range s.Mirrors {
			add(m)
		}
	}
	out := make([]string, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// osImageStandIn is OS_IMAGES' url when the cluster's coreos-bootimages
// could not be read: a day-2 host never downloads its OS image.
const osImageStandIn = "https://unused.invalid/day2-host-booted-from-the-node-iso"

// mcsBase turns the worker pointer's merge source (".../config/worker") into
// the endpoint assisted-service appends the pool name to (".../config").
func mcsBase(source string) string {
	u, err := url.Parse(source)
	if err != nil {
		return source
	}
	if path.Base(u.Path) == "worker" {
		u.Path = path.Dir(u.Path)
	}
	return u.String()
}

// ReleaseMirror is the release image as pulled from the first mirror of the
// cluster's IDMS/ICSP source that covers the release image's repository (the
// longest such source: the repository itself, or a namespace above it, as
// containers-registries.conf(5) prefixes match), digest or tag kept; "" when
// no source covers it. The installer derives OPENSHIFT_INSTALL_RELEASE_IMAGE_MIRROR
// from the mirror configuration too (pkg/asset/agent/mirror/registriesconf.go
// GetMirrorFromRelease, exact repository match only), not from wherever the
// workstation's pull succeeded.
func ReleaseMirror(releaseImage string, sources []clusterinfo.ImageDigestSource) string {
	repo, suffix := releaseImage, ""
	if i := strings.Index(releaseImage, "@"); i >= 0 {
		repo, suffix = releaseImage[:i], releaseImage[i:]
	} else if i := strings.LastIndex(releaseImage, ":"); i > strings.LastIndex(releaseImage, "/") {
		repo, suffix = releaseImage[:i], releaseImage[i:]
	}
	best, out := -1, ""
	for _, s := range sources {
		if len(s.Mirrors) == 0 || len(s.Source) <= best {
			continue
		}
		if repo == s.Source || strings.HasPrefix(repo, s.Source+"/") {
			best, out = len(s.Source), s.Mirrors[0]+repo[len(s.Source):]+suffix
		}
	}
	return out
}

func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}
