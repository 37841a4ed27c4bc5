// Package ignition renders the Ignition 3.4 config of a day-2 node ISO: the
// booted live system runs its own assisted-service and agent in add-nodes mode
// (every new node is its own "node zero" at 127.0.0.1), imports the existing
// cluster, applies the per-MAC host configuration, and installs the host with a
// pointer to the cluster's Machine Config Server.
package ignition

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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
	Token   *authtoken.Token
	// DBPassword is the password of the ephemeral database on the host.
	DBPassword string
}

// Render builds the config.
func Render(in Input) (*types.Config, error) {
	if in.Cluster == nil || in.Nodes == nil || in.Payload == nil || in.Token == nil {
		return nil, errors.New("ignition: cluster, nodes, payload and token are required")
	}
	b := &builder{}
	sshKey := strings.TrimSpace(in.Nodes.SSHKey)
	if sshKey == "" {
		sshKey = strings.TrimSpace(in.Cluster.SSHKey)
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
	c := contents
	u := types.Unit{Name: name, Contents: &c}
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

func (b *builder) environment(in Input) error {
	c := in.Cluster
	b.file(AddNodesEnv, 0o644, envFile(
		"CLUSTER_ID", c.ClusterID,
		"CLUSTER_NAME", c.ClusterName,
		"CLUSTER_API_VIP_DNS_NAME", c.APIDNSName,
		"AUTH_TOKEN_EXPIRY", in.Token.ExpiresAt.UTC().Format(time.RFC3339),
	))
	b.file(RendezvousEnv, 0o644, envFile(
		"NODE_ZERO_IP", nodeZeroIP,
		"SERVICE_BASE_URL", serviceBaseURL,
		"IMAGE_SERVICE_BASE_URL", imageServiceURL,
		"WORKFLOW_TYPE", workflowAddNodes,
	))
	// The marker the import unit waits for: this host is its own node zero.
	b.file("/etc/assisted/node0", 0o644, envFile("NODE_ZERO", "true"))
	img := in.Payload.Images
	b.file(AgentImagesEnv, 0o644, envFile(
		"SERVICE_IMAGE", img[release.ImageAssistedService],
		"AGENT_DOCKER_IMAGE", img[release.ImageAgent],
		"INSTALLER_IMAGE", img[release.ImageInstaller],
		"CONTROLLER_IMAGE", img[release.ImageController],
		"AGENT_UTILS_IMAGE", img[release.ImageUtils],
		"RELEASE_IMAGE", c.ReleaseImage,
		"OPENSHIFT_INSTALL_RELEASE_IMAGE_MIRROR", mirrorOf(c.ReleaseImage, in.Payload.Ref),
	))
	versions, err := json.Marshal([]map[string]any{{
		"openshift_version": majorMinor(c.Version), "cpu_architecture": in.Arch, "url": c.ReleaseImage, "version": c.Version,
	}})
	if err != nil {
		return err
	}
	osImages := []map[string]any{{"openshift_version": majorMinor(c.Version), "cpu_architecture": in.Arch}}
	if c.OSImage != nil {
		osImages[0]["url"] = c.OSImage.Location
		osImages[0]["version"] = c.OSImage.Release
	}
	osJSON, err := json.Marshal(osImages)
	if err != nil {
		return err
	}
	// Holds the token's public key and the DB password: root only.
	b.file(ServiceEnv, 0o600, envFile(
		"AUTH_TYPE", authTypeLocalAuth,
		"EC_PUBLIC_KEY_PEM", in.Token.PublicKey,
		"AGENT_AUTH_TOKEN", in.Token.Token,
		"USER_AUTH_TOKEN", in.Token.Token,
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
		"ENABLE_SINGLE_NODE_DNSMASQ", "false",
	))
	b.file(DBEnv, 0o600, envFile(
		"POSTGRESQL_DATABASE", "installer",
		"POSTGRESQL_USER", "admin",
		"POSTGRESQL_PASSWORD", in.DBPassword,
	))
	imp, _ := json.Marshal(map[string]any{"networking": map[string]any{"userManagedNetworking": c.UserManagedNetworking()}})
	b.file(path.Join(ClusterConfigDir, "import-cluster-config.json"), 0o644, imp)
	if ep := c.IgnitionEndpoint; ep != nil && ep.URL != "" {
		body, _ := json.Marshal(map[string]string{"url": mcsBase(ep.URL), "ca_certificate": ep.CACertificate})
		b.file(path.Join(ClusterConfigDir, "worker-ignition-endpoint.json"), 0o644, body)
	}
	return nil
}

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

// mirrorOf returns the mirror reference the payload was read from, or "".
func mirrorOf(releaseImage, readFrom string) string {
	if readFrom == "" || readFrom == releaseImage {
		return ""
	}
	return readFrom
}

func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}
