package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
)

// AssistedBasePath is where the assisted-service REST API lives on a host
// booted from the add-nodes ISO (http://<ip>:8090 + this path).
const AssistedBasePath = "/api/assisted-install/v2"

// WatcherAuthHeader carries the watcher token: the swagger spec's watcherAuth
// security definition, which is what ListInfraEnvs, v2ListClusters and
// v2GetCluster accept besides user auth.
const WatcherAuthHeader = "Watcher-Authorization"

// UserAuthHeader carries a user token (the swagger spec's userAuth).
const UserAuthHeader = "Authorization"

// AuthHeaderFor says which header a token goes in. A 4.18+ watcher token (its
// auth_scheme claim is watcherAuth) goes in Watcher-Authorization; the 4.17
// service has no watcherAuth scheme and takes its single token (claims
// infra_env_id and exp, no auth_scheme) as a user token in Authorization
// (assisted-service release-4.17 swagger.yaml securityDefinitions and
// pkg/auth/agent_local_authenticator.go). A token that is not a JWT is sent
// as a watcher token.
func AuthHeaderFor(token string) string {
	c, err := authtoken.DecodeClaims(token)
	if err != nil {
		return WatcherAuthHeader
	}
	switch c.AuthScheme {
	case "", authtoken.SchemeUser:
		return UserAuthHeader
	}
	return WatcherAuthHeader
}

// ErrUnauthorized is returned when the host's assisted-service refuses the token.
var ErrUnauthorized = errors.New("assisted-service refused the token (check Secret openshift-config/agent-auth-token: the ISO and the token must come from the same add-nodes run)")

// The subset of the swagger definitions the monitor reads.
type (
	apiInfraEnv struct {
		ID        string `json:"id"`
		ClusterID string `json:"cluster_id"`
	}
	apiCluster struct {
		ID         string    `json:"id"`
		Kind       string    `json:"kind"`
		Status     string    `json:"status"`
		StatusInfo string    `json:"status_info"`
		Hosts      []apiHost `json:"hosts"`
	}
	apiHost struct {
		ID                string       `json:"id"`
		Status            string       `json:"status"`
		StatusInfo        string       `json:"status_info"`
		ValidationsInfo   string       `json:"validations_info"`
		Progress          *apiProgress `json:"progress"`
		RequestedHostname string       `json:"requested_hostname"`
	}
	apiProgress struct {
		CurrentStage           string `json:"current_stage"`
		InstallationPercentage int    `json:"installation_percentage"`
		ProgressInfo           string `json:"progress_info"`
	}
	apiError struct {
		Code   string `json:"code"`
		Reason string `json:"reason"`
	}
)

// assistedClient talks to one host's assisted-service.
type assistedClient struct {
	http  *http.Client
	token string
}

// hostReport is one read of a host's assisted-service.
type hostReport struct {
	url     string // the base URL that answered
	cluster *apiCluster
	host    *apiHost // nil while no host has registered
}

// read asks the host's assisted-service, on the first of its IPs that answers,
// for its infra-envs (the API is up), its cluster and the host record.
func (c *assistedClient) read(ctx context.Context, ips []net.IP, port int, hostname string) (*hostReport, error) {
	var firstErr error
	for _, ip := range ips {
		base := "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(port)) + AssistedBasePath
		r, err := c.readFrom(ctx, base, hostname)
		if err == nil || errors.Is(err, ErrUnauthorized) {
			return r, err
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = errors.New("no IP address known: give one with --ip-addresses")
	}
	return nil, firstErr
}

func (c *assistedClient) readFrom(ctx context.Context, base, hostname string) (*hostReport, error) {
	var envs []apiInfraEnv
	if err := c.get(ctx, base+"/infra-envs", &envs); err != nil {
		return nil, err
	}
	r := &hostReport{url: base}
	var clusters []apiCluster
	if err := c.get(ctx, base+"/clusters", &clusters); err != nil {
		return r, err
	}
	if len(clusters) == 0 {
		return r, nil // the API is up; the cluster is not imported yet
	}
	// An add-nodes host imports one cluster; prefer it if others exist.
	sort.SliceStable(clusters, func(a, b int) bool {
		return clusters[a].Kind == "AddHostsCluster" && clusters[b].Kind != "AddHostsCluster"
	})
	var cl apiCluster
	if err := c.get(ctx, base+"/clusters/"+clusters[0].ID, &cl); err != nil {
		return r, err
	}
	r.cluster = &cl
	r.host = pickHost(cl.Hosts, hostname)
	return r, nil
}

// pickHost finds the host record: by requested hostname, else the only one.
func pickHost(hosts []apiHost, hostname string) *apiHost {
	for i := range hosts {
		if hostname != "" && hosts[i].RequestedHostname == hostname {
			return &hosts[i]
		}
	}
	if len(hosts) == 1 {
		return &hosts[0]
	}
	return nil
}

func (c *assistedClient) get(ctx context.Context, url string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set(AuthHeaderFor(c.token), c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return ErrUnauthorized
	case resp.StatusCode != http.StatusOK:
		var e apiError
		if json.Unmarshal(body, &e) == nil && e.Reason != "" {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, e.Reason)
		}
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("GET %s: decode: %w", url, err)
	}
	return nil
}

// parseValidations decodes a host's validations_info: a JSON string with the
// validation results grouped by category.
func parseValidations(s string) ([]Validation, error) {
	if s == "" {
		return nil, nil
	}
	var byCategory map[string][]Validation
	if err := json.Unmarshal([]byte(s), &byCategory); err != nil {
		return nil, fmt.Errorf("validations_info: %w", err)
	}
	var out []Validation
	for _, vs := range byCategory {
		out = append(out, vs...)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// failing reports whether a validation status holds the host back.
func failing(status string) bool { return status == "failure" || status == "error" }

// Host statuses that mean installation has started, or is over.
var (
	installingStatuses = map[string]bool{
		"preparing-for-installation": true, "preparing-successful": true, "installing": true,
		"installing-in-progress": true, "installing-pending-user-action": true, "installed": true,
		"added-to-existing-cluster": true,
	}
	failedStatuses = map[string]bool{"error": true, "cancelled": true}
	// After these stages the host reboots into the installed system and its
	// assisted-service is gone: the kubelet and the API take over.
	rebootStages = map[string]bool{"Rebooting": true, "Waiting for ignition": true, "Configuring": true, "Joined": true, "Done": true}
)
