package resources

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// statusURLFields are the status fields that hold assisted-service URLs, per
// kind (research §2.4). ACI and Agent URLs are written by the controllers only
// when empty, so they are restored (rewritten) or left empty; the InfraEnv's
// are recomputed from the database and only dropped.
var statusURLFields = map[string][][]string{
	"AgentClusterInstall": {{"debugInfo", "eventsURL"}, {"debugInfo", "logsURL"}},
	"Agent":               {{"debugInfo", "eventsURL"}, {"debugInfo", "logsURL"}},
	"InfraEnv": {{"debugInfo", "eventsURL"}, {"debugInfo", "staticNetworkDownloadURL"}, {"isoDownloadURL"},
		{"bootArtifacts", "initrd"}, {"bootArtifacts", "rootfs"}, {"bootArtifacts", "kernel"}, {"bootArtifacts", "ipxeScript"},
		{"bootArtifacts", "discoveryIgnitionURL"}},
}

// restoredURLKinds are the kinds whose status URLs are written back.
var restoredURLKinds = map[string]bool{"AgentClusterInstall": true, "Agent": true}

// The status URL forms assisted-service's controllers write, and the id claim
// of the api_key they sign each with when AUTH_TYPE=local (upstream
// openshift/assisted-service, internal/controller/controllers/common.go
// generateEventsURL and signURL, gencrypto/token.go SignURL):
//
//	ACI   debugInfo.eventsURL  <base>/api/assisted-install/v2/events?cluster_id=<cluster>        cluster_id   (clusterdeployments_controller.go populateEventsURL)
//	ACI   debugInfo.logsURL    <base>/api/assisted-install/v2/clusters/<cluster>/logs              cluster_id   (clusterdeployments_controller.go generateControllerLogsDownloadURL)
//	Agent debugInfo.eventsURL  <base>/api/assisted-install/v2/events?host_id=<agent name>          infra_env_id (agent_controller.go populateEventsURL: the host's infra-env)
//	Agent debugInfo.logsURL    <base>/api/assisted-install/v2/clusters/<cluster>/logs?host_id=<host>&logs_type=host  cluster_id (agent_controller.go generateControllerLogsDownloadURL)
//
// With AUTH_TYPE none or rhsso the same URLs carry no api_key. The Agent's
// events URL names no infra-env: its id comes from the node-0 api_key's
// infra_env_id claim or, without one, from the Agent's InfraEnv in the input.
// The InfraEnv's and PreprovisioningImage's URLs are recomputed by their
// controllers from the database and are dropped with the status.
var (
	eventsPath   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/v2/events$`) })
	clusterLogs  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/v2/clusters/([0-9a-fA-F-]{36})/logs$`) })
	infraEnvFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/v2/infra-envs/([0-9a-fA-F-]{36})/downloads/files$`) })
	uuidRE       = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	})
)

// signFor is the claim a rewritten status URL is signed with: exactly one of
// the two ids is set.
type signFor struct{ clusterID, infraEnvID string }

// claimFor finds the claim the controller signs u with (see the table above);
// ieFallback is the infra-env id of the object's InfraEnv, if known.
func claimFor(u *url.URL, ieFallback string) (signFor, error) {
	q := u.Query()
	check := func(s signFor) (signFor, error) {
		id := s.clusterID + s.infraEnvID
		if !uuidRE().MatchString(id) {
			return signFor{}, fmt.Errorf("the id %q it names is not a UUID", id)
		}
		return s, nil
	}
	switch {
	case eventsPath().MatchString(u.Path):
		switch {
		case q.Get("cluster_id") != "":
			return check(signFor{clusterID: q.Get("cluster_id")})
		case q.Get("infra_env_id") != "":
			return check(signFor{infraEnvID: q.Get("infra_env_id")})
		case q.Get("host_id") != "":
			if id := tokenClaim(q.Get("api_key"), "infra_env_id"); id != "" {
				return check(signFor{infraEnvID: id})
			}
			if ieFallback != "" {
				return check(signFor{infraEnvID: ieFallback})
			}
			return signFor{}, errors.New("a host's events URL without an infra_env_id api_key, and the Agent's InfraEnv (label " + LabelInfraEnv + ") is not in the bundle with its id")
		}
		return signFor{}, errors.New("an events URL that names no cluster_id, infra_env_id or host_id")
	case clusterLogs().MatchString(u.Path):
		return check(signFor{clusterID: clusterLogs().FindStringSubmatch(u.Path)[1]})
	case infraEnvFile().MatchString(u.Path):
		return check(signFor{infraEnvID: infraEnvFile().FindStringSubmatch(u.Path)[1]})
	}
	return signFor{}, fmt.Errorf("a URL of a form assisted-service's controllers do not write (path %s)", u.Path)
}

// tokenClaim returns a string claim of a JWT without verifying it: node 0's
// api_key only tells which infra-env a URL was signed for (the bundle itself
// is verified). Empty when the token or claim is absent or malformed.
func tokenClaim(tok, claim string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	s, _ := m[claim].(string)
	return s
}

// StatusURLs captures the ACI and Agent status URLs, rewritten onto
// Options.ServiceURL (path and query kept, node-0 api_key dropped) into
// Item.Status, and decides the claim each is signed with; Apply signs them
// with Options.Signer when it writes them. A URL whose claim cannot be found
// fails the plan, before anything is written. Without a ServiceURL they are
// left out, so the object gets none and its controller writes its own. A
// node-0 URL is never kept.
type StatusURLs struct{}

func (StatusURLs) Name() string { return "status-urls" }
func (StatusURLs) AppliesTo(obj *unstructured.Unstructured) bool {
	gk := obj.GroupVersionKind().GroupKind()
	return restoredURLKinds[gk.Kind] && (gk.Group == "agent-install.openshift.io" || gk.Group == "extensions.hive.openshift.io")
}
func (StatusURLs) Transform(it *Item, p *Plan) error {
	fields := statusURLFields[it.Object.GetKind()]
	found := map[string]string{}
	for _, f := range fields {
		if s, ok, _ := unstructured.NestedString(it.Source.Object, append([]string{"status"}, f...)...); ok && s != "" {
			found[strings.Join(f, ".")] = s
		}
	}
	if len(found) == 0 {
		return nil
	}
	if p.opts.ServiceURL == "" {
		it.Note("node-0 status URLs removed (no service URL given)")
		return nil
	}
	ieFallback := ""
	if it.Object.GetKind() == "Agent" {
		ieFallback = p.infraEnvIDOf(it.Source)
	}
	status := map[string]any{}
	sign := map[string]signFor{}
	for _, f := range fields {
		path := strings.Join(f, ".")
		s, ok := found[path]
		if !ok {
			continue
		}
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("status.%s: node-0 URL does not parse", path)
		}
		claim, err := claimFor(u, ieFallback)
		if err != nil {
			return fmt.Errorf("status.%s: cannot be signed for cluster 0: %w (without a service URL the node-0 URLs are removed and cluster 0's controllers write their own)", path, err)
		}
		out, err := rebase(u, p.opts.ServiceURL)
		if err != nil {
			return fmt.Errorf("status.%s: %w", path, err)
		}
		if err := unstructured.SetNestedField(status, out, f...); err != nil {
			return err
		}
		sign[path] = claim
	}
	it.Status = status
	it.statusSign = sign
	it.Note("status URLs rewritten to the service URL")
	return nil
}

// infraEnvIDOf is the assisted-service id of obj's InfraEnv (by the
// infraenvs label: in obj's namespace, where the Agent controller creates
// Agents, else the only InfraEnv of that name in the input), read from that
// InfraEnv's status URLs; empty when unknown or ambiguous.
func (p *Plan) infraEnvIDOf(obj *unstructured.Unstructured) string {
	name := obj.GetLabels()[LabelInfraEnv]
	if name == "" {
		return ""
	}
	var named []*unstructured.Unstructured
	for _, it := range p.Items {
		if it.Source.GetKind() != "InfraEnv" || it.Source.GetName() != name {
			continue
		}
		if it.Source.GetNamespace() == obj.GetNamespace() {
			_, ie := IDsFromStatusURLs(it.Source)
			return ie
		}
		named = append(named, it.Source)
	}
	if len(named) == 1 {
		_, ie := IDsFromStatusURLs(named[0])
		return ie
	}
	return ""
}

// rebase moves a node-0 URL onto base, keeping path and query but never the
// node-0 api_key.
func rebase(u *url.URL, base string) (string, error) {
	b, err := url.Parse(base)
	if err != nil || b.Host == "" {
		return "", fmt.Errorf("service URL %q is not an absolute URL", base)
	}
	q := u.Query()
	q.Del("api_key")
	out := url.URL{Scheme: b.Scheme, Host: b.Host, Path: strings.TrimSuffix(b.Path, "/") + u.Path, RawQuery: q.Encode()}
	return out.String(), nil
}

var (
	clusterPathID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/clusters/([0-9a-fA-F-]{36})(/|$)`) })
	// assisted-service's /infra-envs/<id>/ and the image service's /byid/<id>/
	// and /images/<id> paths.
	infraEnvPathID = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`/(?:infra-envs|byid|images)/([0-9a-fA-F-]{36})(/|$)`)
	})
)

// idsFromURLs finds the cluster and infra-env ids in assisted-service URLs:
// the cluster_id / infra_env_id query parameters or the /clusters/<id>/ and
// /infra-envs/<id>/ (or image service) path segments.
func idsFromURLs(urls []string) (clusterID, infraEnvID string) {
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if v := u.Query().Get("cluster_id"); v != "" && clusterID == "" {
			clusterID = v
		}
		if v := u.Query().Get("infra_env_id"); v != "" && infraEnvID == "" {
			infraEnvID = v
		}
		if m := clusterPathID().FindStringSubmatch(u.Path); m != nil && clusterID == "" {
			clusterID = m[1]
		}
		if m := infraEnvPathID().FindStringSubmatch(u.Path); m != nil && infraEnvID == "" {
			infraEnvID = m[1]
		}
	}
	return clusterID, infraEnvID
}

// IDsFromStatusURLs returns the assisted-service cluster and infra-env ids that
// an exported object's status URLs carry (empty when none); restore/kubekeys
// uses them to match database rows.
func IDsFromStatusURLs(obj *unstructured.Unstructured) (clusterID, infraEnvID string) {
	return idsFromURLs(statusURLs(obj))
}

func statusURLs(obj *unstructured.Unstructured) []string {
	var out []string
	for _, f := range statusURLFields[obj.GetKind()] {
		if s, ok, _ := unstructured.NestedString(obj.Object, append([]string{"status"}, f...)...); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// nodeZeroBases collects the scheme://host[:port] of every status URL in the
// input, plus the extra ones given: these are node 0's services.
func nodeZeroBases(objs []*unstructured.Unstructured, extra []string) []string {
	set := map[string]bool{}
	add := func(raw string) {
		if b, ok := baseOf(raw); ok {
			set[b] = true
		}
	}
	for _, o := range objs {
		if o == nil {
			continue
		}
		for _, s := range statusURLs(o) {
			add(s)
		}
	}
	for _, s := range extra {
		add(s)
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// baseOf is a URL's scheme://host:port, lower case, with the scheme's default
// port made explicit, so that two spellings of one service compare equal and
// two services on one host do not.
func baseOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Scheme == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		}
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port, true
}

// checkNoNodeZeroURL fails the plan when any string in an object to apply (or
// in its status to write) still points at one of node 0's services (same
// scheme, host and port).
func (p *Plan) checkNoNodeZeroURL() error {
	bases := map[string]bool{}
	for _, b := range p.NodeZeroURLs {
		if n, ok := baseOf(b); ok {
			bases[n] = true
		}
	}
	if len(bases) == 0 {
		return nil
	}
	for _, it := range p.Items {
		if it.Skip != "" {
			continue
		}
		for _, root := range []map[string]any{it.Object.Object, it.Status} {
			if path, u := findNodeZeroURL(root, bases, ""); path != "" {
				return fmt.Errorf("%s: a node-0 URL would survive at %s (%s): node 0's services are gone after the hand-over; "+
					"remove or replace it in the source, or restore with --skip-resources and apply this object yourself", it.Key(), path, redactURL(u))
			}
		}
	}
	return nil
}

// redactURL drops the query (which may hold an api_key) from a URL for an error.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}

// findNodeZeroURL returns the path of the first string holding a URL of one
// of bases, and that URL. Secret data is base64 and not searched.
func findNodeZeroURL(v any, bases map[string]bool, path string) (string, string) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if path == "" && k == "data" && t["kind"] == "Secret" {
				continue
			}
			if r, u := findNodeZeroURL(t[k], bases, path+"."+k); r != "" {
				return r, u
			}
		}
	case []any:
		for i, c := range t {
			if r, u := findNodeZeroURL(c, bases, fmt.Sprintf("%s[%d]", path, i)); r != "" {
				return r, u
			}
		}
	case string:
		if u := urlWithBase(t, bases); u != "" {
			return strings.TrimPrefix(path, "."), u
		}
	}
	return "", ""
}

// urlInText finds URLs inside free text (YAML, JSON, a command line).
var urlInText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`) })

// urlWithBase returns the first URL in s whose base is one of bases.
func urlWithBase(s string, bases map[string]bool) string {
	if !strings.Contains(s, "://") {
		return ""
	}
	for _, m := range urlInText().FindAllString(s, -1) {
		if b, ok := baseOf(m); ok && bases[b] {
			return m
		}
	}
	return ""
}

// signURLs returns a copy of status with every URL signed by s for the claim
// chosen by StatusURLs (unchanged without a signer).
func signURLs(status map[string]any, s URLSigner, claims map[string]signFor) (map[string]any, error) {
	out := runtime.DeepCopyJSON(status)
	if s == nil {
		return out, nil
	}
	var walk func(m map[string]any, prefix string) error
	walk = func(m map[string]any, prefix string) error {
		for k, v := range m {
			path := prefix + k
			switch t := v.(type) {
			case map[string]any:
				if err := walk(t, path+"."); err != nil {
					return err
				}
			case string:
				c, ok := claims[path]
				if !ok {
					return fmt.Errorf("sign status URL %s: no claim was planned for it", path)
				}
				signed, err := s.SignURL(t, c.clusterID, c.infraEnvID)
				if err != nil {
					return fmt.Errorf("sign status URL %s: %w", path, err)
				}
				m[k] = signed
			}
		}
		return nil
	}
	return out, walk(out, "")
}
