package resources

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

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

// StatusURLs captures the ACI and Agent status URLs, rewritten onto
// Options.ServiceURL (path and query kept, node-0 api_key dropped) into
// Item.Status; Apply signs them with Options.Signer when it writes them.
// Without a ServiceURL they are left out, so the object gets none. A node-0
// URL is never kept.
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
	var all []string
	for _, s := range found {
		all = append(all, s)
	}
	clusterID, infraEnvID := idsFromURLs(all)
	status := map[string]any{}
	for _, f := range fields {
		s, ok := found[strings.Join(f, ".")]
		if !ok {
			continue
		}
		u, err := rebase(s, p.opts.ServiceURL)
		if err != nil {
			return fmt.Errorf("status.%s: %w", strings.Join(f, "."), err)
		}
		if err := unstructured.SetNestedField(status, u, f...); err != nil {
			return err
		}
	}
	it.Status = status
	it.statusClusterID, it.statusInfraEnvID = clusterID, infraEnvID
	it.Note("status URLs rewritten to the service URL")
	return nil
}

// rebase moves a node-0 URL onto base, keeping path and query but never the
// node-0 api_key.
func rebase(raw, base string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("node-0 URL does not parse")
	}
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
	clusterPathID = regexp.MustCompile(`/clusters/([0-9a-fA-F-]{36})(/|$)`)
	// assisted-service's /infra-envs/<id>/ and the image service's /byid/<id>/
	// and /images/<id> paths.
	infraEnvPathID = regexp.MustCompile(`/(?:infra-envs|byid|images)/([0-9a-fA-F-]{36})(/|$)`)
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
		if m := clusterPathID.FindStringSubmatch(u.Path); m != nil && clusterID == "" {
			clusterID = m[1]
		}
		if m := infraEnvPathID.FindStringSubmatch(u.Path); m != nil && infraEnvID == "" {
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
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			set[u.Scheme+"://"+u.Host] = true
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

// checkNoNodeZeroURL fails the plan when any string in an object to apply (or
// in its status to write) still points at a node-0 host.
func (p *Plan) checkNoNodeZeroURL() error {
	var hosts []string
	for _, b := range p.NodeZeroURLs {
		if u, err := url.Parse(b); err == nil {
			h := u.Hostname()
			if strings.Contains(h, ":") {
				h = "[" + h + "]" // IPv6 literal, as written in URLs
			}
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	for _, it := range p.Items {
		if it.Skip != "" {
			continue
		}
		for _, root := range []map[string]any{it.Object.Object, it.Status} {
			if path := findNodeZeroURL(root, hosts, ""); path != "" {
				return fmt.Errorf("%s: a node-0 URL would survive at %s", it.Key(), path)
			}
		}
	}
	return nil
}

// findNodeZeroURL returns the path of the first string holding "://<host>"
// followed by a port, path, query or its end. Secret data is base64 and not
// searched.
func findNodeZeroURL(v any, hosts []string, path string) string {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if path == "" && k == "data" && t["kind"] == "Secret" {
				continue
			}
			if r := findNodeZeroURL(c, hosts, path+"."+k); r != "" {
				return r
			}
		}
	case []any:
		for i, c := range t {
			if r := findNodeZeroURL(c, hosts, fmt.Sprintf("%s[%d]", path, i)); r != "" {
				return r
			}
		}
	case string:
		for _, h := range hosts {
			if containsURLHost(t, h) {
				return strings.TrimPrefix(path, ".")
			}
		}
	}
	return ""
}

func containsURLHost(s, host string) bool {
	needle := "://" + host
	for i := strings.Index(s, needle); i >= 0; {
		end := i + len(needle)
		if end == len(s) || strings.ContainsRune(":/?#\"' ", rune(s[end])) {
			return true
		}
		next := strings.Index(s[end:], needle)
		if next < 0 {
			return false
		}
		i = end + next
	}
	return false
}

// signURLs returns a copy of status with every URL signed by s (unchanged
// without a signer).
func signURLs(status map[string]any, s URLSigner, clusterID, infraEnvID string) (map[string]any, error) {
	out := runtime.DeepCopyJSON(status)
	if s == nil {
		return out, nil
	}
	var walk func(m map[string]any) error
	walk = func(m map[string]any) error {
		for k, v := range m {
			switch t := v.(type) {
			case map[string]any:
				if err := walk(t); err != nil {
					return err
				}
			case string:
				signed, err := s.SignURL(t, clusterID, infraEnvID)
				if err != nil {
					return fmt.Errorf("sign status URL %s: %w", k, err)
				}
				m[k] = signed
			}
		}
		return nil
	}
	return out, walk(out)
}
