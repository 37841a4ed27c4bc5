package resources

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/url"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Golden status URLs in the forms assisted-service's controllers write them
// (openshift/assisted-service, master at 063b25795):
//   - internal/controller/controllers/common.go: generateEventsURL builds
//     <SERVICE_BASE_URL>/api/assisted-install/v2/events?<filter>=<id>; signURL
//     adds api_key only when AUTH_TYPE=local (gencrypto.SignURL).
//   - clusterdeployments_controller.go populateEventsURL: ACI events, filter
//     cluster_id, claim cluster_id; generateControllerLogsDownloadURL: ACI logs
//     <base>/api/assisted-install/v2/clusters/<id>/logs, claim cluster_id.
//   - agent_controller.go populateEventsURL: Agent events, filter host_id=<agent
//     name>, claim infra_env_id (the host's infra-env);
//     generateControllerLogsDownloadURL: .../clusters/<id>/logs?host_id=..&logs_type=host,
//     claim cluster_id.
//   - internal/gencrypto/token.go LocalJWTForKey: ES256, one claim {<key>: id}.
//
// url.Values.Encode sorts the query keys, so api_key comes first.
const (
	gCluster  = "5b5b5b5b-1111-4222-8333-944444444444"
	gInfraEnv = "6c6c6c6c-1111-4222-8333-955555555555"
	gHost     = "7d7d7d7d-1111-4222-8333-966666666666"
	gSvc      = "https://assisted-service-multicluster-engine.apps.hub.example.com"
)

// nodeZeroToken mints an api_key the way node 0's service (AUTH_TYPE=local)
// signs its URLs: gencrypto.LocalJWTForKey.
func nodeZeroToken(t *testing.T, claim, id string) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{claim: id}).SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func agentObj(name string, labels map[string]any, events, logs string) *unstructured.Unstructured {
	dbg := map[string]any{}
	if events != "" {
		dbg["eventsURL"] = events
	}
	if logs != "" {
		dbg["logsURL"] = logs
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
		"metadata": map[string]any{"name": name, "namespace": "site", "labels": labels},
		"spec":     map[string]any{"approved": true},
		"status":   map[string]any{"debugInfo": dbg},
	}}
}

func aciObj(events, logs string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
		"metadata": map[string]any{"name": "spoke", "namespace": "site"},
		"spec":     map[string]any{"clusterDeploymentRef": map[string]any{"name": "spoke"}},
		"status":   map[string]any{"debugInfo": map[string]any{"eventsURL": events, "logsURL": logs}},
	}}
}

func infraEnvObj(name, events string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
		"metadata": map[string]any{"name": name, "namespace": "site"},
		"status":   map[string]any{"debugInfo": map[string]any{"eventsURL": events}},
	}}
}

// recordingSigner records the claim of each URL it signs.
type recordingSigner struct{ got map[string]string }

func (s *recordingSigner) SignURL(u, clusterID, infraEnvID string) (string, error) {
	claim := "cluster_id=" + clusterID
	if clusterID == "" {
		claim = "infra_env_id=" + infraEnvID
	}
	p, _ := url.Parse(u)
	s.got[p.Path+"?"+p.Query().Get("host_id")+p.Query().Get("cluster_id")] = claim
	q := p.Query()
	q.Set("api_key", "SIGNED")
	p.RawQuery = q.Encode()
	return p.String(), nil
}

func TestStatusURLs_GoldenForms(t *testing.T) {
	for _, mode := range []struct {
		name  string
		node0 string // node 0's SERVICE_BASE_URL
		key   func(claim, id string) string
	}{
		{"AUTH_TYPE=local", "http://10.1.2.3:8090", func(c, id string) string { return nodeZeroToken(t, c, id) }},
		{"AUTH_TYPE=none or rhsso", "https://assisted.site-a.example.com", nil},
	} {
		t.Run(mode.name, func(t *testing.T) {
			withKey := func(raw, claim, id string) string {
				if mode.key == nil {
					return raw
				}
				u, _ := url.Parse(raw)
				q := u.Query()
				q.Set("api_key", mode.key(claim, id))
				u.RawQuery = q.Encode()
				return u.String()
			}
			base := mode.node0 + "/api/assisted-install/v2"
			objs := []*unstructured.Unstructured{
				aciObj(withKey(base+"/events?cluster_id="+gCluster, "cluster_id", gCluster),
					withKey(base+"/clusters/"+gCluster+"/logs", "cluster_id", gCluster)),
				agentObj(gHost, map[string]any{LabelInfraEnv: "site-ie"},
					withKey(base+"/events?host_id="+gHost, "infra_env_id", gInfraEnv),
					withKey(base+"/clusters/"+gCluster+"/logs?host_id="+gHost+"&logs_type=host", "cluster_id", gCluster)),
				infraEnvObj("site-ie", withKey(base+"/events?infra_env_id="+gInfraEnv, "infra_env_id", gInfraEnv)),
			}
			p, err := NewPlan(objs, Options{ServiceURL: gSvc})
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			want := map[string]map[string]string{
				"AgentClusterInstall": {
					"eventsURL": gSvc + "/api/assisted-install/v2/events?cluster_id=" + gCluster,
					"logsURL":   gSvc + "/api/assisted-install/v2/clusters/" + gCluster + "/logs",
				},
				"Agent": {
					"eventsURL": gSvc + "/api/assisted-install/v2/events?host_id=" + gHost,
					"logsURL":   gSvc + "/api/assisted-install/v2/clusters/" + gCluster + "/logs?host_id=" + gHost + "&logs_type=host",
				},
			}
			for kind, fields := range want {
				it := findKind(t, p, kind)
				for f, w := range fields {
					if got, _, _ := unstructured.NestedString(it.Status, "debugInfo", f); got != w {
						t.Errorf("%s %s\n got %s\nwant %s", kind, f, got, w)
					}
				}
			}
			if it := findKind(t, p, "InfraEnv"); it.Status != nil {
				t.Errorf("InfraEnv status is recomputed by its controller, got %v", it.Status)
			}
			// The claims each URL is signed with on cluster 0 are the ones the
			// controller uses.
			s := &recordingSigner{got: map[string]string{}}
			for _, kind := range []string{"AgentClusterInstall", "Agent"} {
				it := findKind(t, p, kind)
				if _, err := signURLs(it.Status, s, it.statusSign); err != nil {
					t.Fatalf("sign %s: %v", kind, err)
				}
			}
			wantClaims := map[string]string{
				"/api/assisted-install/v2/events?" + gCluster:                      "cluster_id=" + gCluster,
				"/api/assisted-install/v2/clusters/" + gCluster + "/logs?":         "cluster_id=" + gCluster,
				"/api/assisted-install/v2/events?" + gHost:                         "infra_env_id=" + gInfraEnv,
				"/api/assisted-install/v2/clusters/" + gCluster + "/logs?" + gHost: "cluster_id=" + gCluster,
			}
			for k, w := range wantClaims {
				if s.got[k] != w {
					t.Errorf("claim of %s = %q, want %q", k, s.got[k], w)
				}
			}
		})
	}
}

func findKind(t *testing.T, p *Plan, kind string) *Item {
	t.Helper()
	for _, it := range p.Items {
		if it.Object.GetKind() == kind {
			return it
		}
	}
	t.Fatalf("no %s in plan", kind)
	return nil
}

// An Agent events URL names only host_id; without an api_key (AUTH_TYPE
// none/rhsso) and without its InfraEnv in the bundle, nothing tells which
// infra-env to sign for: the plan (before any write) refuses it.
func TestStatusURLs_AgentEventsWithoutInfraEnvFailsThePlan(t *testing.T) {
	a := agentObj(gHost, map[string]any{LabelInfraEnv: "absent"}, "https://a.example.com/api/assisted-install/v2/events?host_id="+gHost, "")
	_, err := NewPlan([]*unstructured.Unstructured{a}, Options{ServiceURL: gSvc})
	if err == nil || !strings.Contains(err.Error(), "status.debugInfo.eventsURL") || !strings.Contains(err.Error(), LabelInfraEnv) {
		t.Fatalf("err = %v", err)
	}
	// An api_key whose claim is not a UUID is refused too.
	bad := agentObj(gHost, nil, "https://a.example.com/api/assisted-install/v2/events?host_id="+gHost+"&api_key="+nodeZeroToken(t, "infra_env_id", "../x"), "")
	if _, err := NewPlan([]*unstructured.Unstructured{bad}, Options{ServiceURL: gSvc}); err == nil || !strings.Contains(err.Error(), "not a UUID") {
		t.Fatalf("err = %v", err)
	}
	// A URL of a form no controller writes.
	odd := agentObj(gHost, nil, "https://a.example.com/api/assisted-install/v2/somewhere", "")
	if _, err := NewPlan([]*unstructured.Unstructured{odd}, Options{ServiceURL: gSvc}); err == nil || !strings.Contains(err.Error(), "do not write") {
		t.Fatalf("err = %v", err)
	}
}

func TestNodeZeroBaseComparesSchemeAndPort(t *testing.T) {
	bases := map[string]bool{}
	for _, b := range []string{"http://192.168.111.80:8090", "https://Node0.example.com"} {
		n, _ := baseOf(b)
		bases[n] = true
	}
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"http://192.168.111.80:8090/api/assisted-install/v2/events", true},
		{"see http://192.168.111.80:8090", true},
		{"https://192.168.111.80:6443", false}, // node 0's API server, not its service
		{"http://192.168.111.80:8091/x", false},
		{"https://192.168.111.80:8090/x", false},
		{"http://192.168.111.80/x", false},
		{"https://node0.example.com:443/x", true}, // default port spelled out
		{"https://node0.example.com/x", true},
		{"http://node0.example.com/x", false},
		{"https://node0.example.com.evil/x", false},
	} {
		if got := urlWithBase(c.s, bases) != ""; got != c.want {
			t.Errorf("urlWithBase(%q) = %v, want %v", c.s, got, c.want)
		}
	}
	// A service URL on node 0's former address with another port is accepted.
	objs := []*unstructured.Unstructured{aciObj("http://192.168.111.80:8090/api/assisted-install/v2/events?cluster_id="+gCluster,
		"http://192.168.111.80:8090/api/assisted-install/v2/clusters/"+gCluster+"/logs")}
	if _, err := NewPlan(objs, Options{ServiceURL: "https://192.168.111.80:8443"}); err != nil {
		t.Fatalf("service URL on node 0's address, other port: %v", err)
	}
	if _, err := NewPlan(objs, Options{ServiceURL: "http://192.168.111.80:8090/"}); err == nil || !strings.Contains(err.Error(), "node-0 URL would survive") {
		t.Fatalf("service URL equal to node 0's: err = %v", err)
	}
}
