// Package clusterinfo reads, with the user's kubeconfig, what an installed
// OpenShift cluster must tell a new node (the same objects node-joiner's
// ClusterInfo reads), and saves or loads it as a cluster profile so an ISO can
// be built offline.
package clusterinfo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// ProfileAPIVersion and ProfileKind identify a saved cluster profile.
const (
	ProfileAPIVersion = "assisted.kubectl.io/v1alpha1"
	ProfileKind       = "ClusterProfile"
)

// Info is everything the node image needs from the cluster. Saved as JSON, it
// is the cluster profile; it holds the pull secret, so the file is private.
type Info struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	CapturedAt time.Time `json:"capturedAt"`

	ClusterID    string `json:"clusterID"`
	ClusterName  string `json:"clusterName"`
	BaseDomain   string `json:"baseDomain"`
	APIDNSName   string `json:"apiDNSName"`
	Version      string `json:"version"`
	ReleaseImage string `json:"releaseImage"`
	// MultiArch is true when the cluster runs a multi-architecture payload.
	MultiArch bool `json:"multiArch,omitempty"`
	// Platform is the installer's platform name: baremetal, none, vsphere, ...
	Platform string `json:"platform"`
	// Architecture is the control plane's RPM architecture (x86_64, aarch64, ...).
	Architecture string `json:"architecture"`

	Proxy              *Proxy              `json:"proxy,omitempty"`
	PullSecret         string              `json:"pullSecret"`
	UserCABundle       string              `json:"userCABundle,omitempty"`
	ImageDigestSources []ImageDigestSource `json:"imageDigestSources,omitempty"`
	OSImage            *OSImage            `json:"osImage,omitempty"`
	IgnitionEndpoint   *IgnitionEndpoint   `json:"ignitionEndpoint,omitempty"`
	SSHKey             string              `json:"sshKey,omitempty"`
	FIPS               bool                `json:"fips,omitempty"`
	ChronyConf         string              `json:"chronyConf,omitempty"`
	Nodes              []Node              `json:"nodes"`
	// AuthToken is the agent token found in the cluster when the profile was
	// saved, so an offline build can reuse it while it has more than 24h left.
	AuthToken *AuthToken `json:"authToken,omitempty"`

	// Warnings are the optional objects that could not be read.
	Warnings []string `json:"warnings,omitempty"`
}

// Proxy is the cluster-wide proxy.
type Proxy struct {
	HTTPProxy  string `json:"httpProxy,omitempty"`
	HTTPSProxy string `json:"httpsProxy,omitempty"`
	NoProxy    string `json:"noProxy,omitempty"`
}

// ImageDigestSource maps a source repository to its mirrors (IDMS and ICSP).
type ImageDigestSource struct {
	Source  string   `json:"source"`
	Mirrors []string `json:"mirrors"`
}

// OSImage is the live ISO that coreos-bootimages names for the architecture.
type OSImage struct {
	Location string `json:"location,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Release  string `json:"release,omitempty"`
}

// IgnitionEndpoint is the secure Machine Config Server endpoint and its CA.
type IgnitionEndpoint struct {
	URL           string `json:"url"`
	CACertificate string `json:"caCertificate,omitempty"`
}

// Node is an existing node, for conflict checks.
type Node struct {
	Name         string   `json:"name"`
	Architecture string   `json:"architecture,omitempty"`
	Roles        []string `json:"roles,omitempty"`
	Addresses    []string `json:"addresses,omitempty"`
}

// AuthToken is the content of openshift-config/agent-auth-token.
type AuthToken struct {
	// Token is the agent token (agentAuthToken).
	Token string `json:"token"`
	// UserToken and WatcherToken are the 4.18+ userAuthToken and
	// watcherAuthToken; empty for a 4.17 cluster's single token.
	UserToken    string    `json:"userToken,omitempty"`
	WatcherToken string    `json:"watcherToken,omitempty"`
	PublicKey    string    `json:"publicKey"`
	ExpiresAt    time.Time `json:"expiresAt"`
}

// SupportedPlatforms are those a day-2 ISO can join.
var SupportedPlatforms = []string{"baremetal", "vsphere", "nutanix", "none", "external"}

// ValidatePlatform checks the platform (and, for ppc64le/s390x, that it is none).
func (in *Info) ValidatePlatform() error {
	ok := false
	for _, p := range SupportedPlatforms {
		ok = ok || p == in.Platform
	}
	if !ok {
		return fmt.Errorf("platform %q is not supported for adding nodes: supported platforms are %s", in.Platform, strings.Join(SupportedPlatforms, ", "))
	}
	if (in.Architecture == "ppc64le" || in.Architecture == "s390x") && in.Platform != "none" {
		return fmt.Errorf("platform %q is not supported on %s: only platform none is", in.Platform, in.Architecture)
	}
	return nil
}

// UserManagedNetworking is true on platforms without on-cluster load balancers
// (none, external).
func (in *Info) UserManagedNetworking() bool {
	return in.Platform == "none" || in.Platform == "external"
}

// SaveProfile writes the profile, readable by the owner only (it holds the
// pull secret).
func (in *Info) SaveProfile(path string) error {
	in.APIVersion, in.Kind = ProfileAPIVersion, ProfileKind
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".part"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LoadProfile reads a profile saved by SaveProfile, strictly.
func LoadProfile(path string) (*Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var in Info
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("cluster profile %s: %w", path, err)
	}
	if in.APIVersion != ProfileAPIVersion || in.Kind != ProfileKind {
		return nil, fmt.Errorf("cluster profile %s: apiVersion/kind %q/%q, want %s/%s", path, in.APIVersion, in.Kind, ProfileAPIVersion, ProfileKind)
	}
	var missing []string
	for name, v := range map[string]string{"clusterID": in.ClusterID, "releaseImage": in.ReleaseImage, "apiDNSName": in.APIDNSName, "pullSecret": in.PullSecret, "platform": in.Platform, "architecture": in.Architecture} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cluster profile %s: missing %s", path, strings.Join(missing, ", "))
	}
	return &in, nil
}

// RPMArch maps Go/Kubernetes architecture names to RPM ones (the names ISOs
// and nodes-config use): amd64 -> x86_64, arm64 -> aarch64.
func RPMArch(a string) string {
	switch a {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return a
}

// GoArch is the inverse of RPMArch, for OCI platforms.
func GoArch(a string) string {
	switch a {
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return a
}

// ErrRequired is wrapped by errors for required objects that could not be read.
var ErrRequired = errors.New("required cluster object unavailable")
