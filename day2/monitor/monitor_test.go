package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
)

const twoHosts = `hosts:
- hostname: extra-worker-0
  interfaces: [{name: eth0, macAddress: "52:54:00:00:00:01"}]
  networkConfig:
    interfaces:
    - name: eth0
      mac-address: "52:54:00:00:00:01"
      ipv4: {address: [{ip: 192.168.111.90, prefix-length: 24}]}
      ipv6: {address: [{ip: "fd00::90", prefix-length: 64}]}
- interfaces: [{name: eth0, macAddress: "52:54:00:00:00:02"}]
`

func TestHostsFromConfig(t *testing.T) {
	cfg, err := nodesconfig.Parse(strings.NewReader(twoHosts))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		overrides []string
		want      string // fmt of labels and IPs
		wantErr   string
	}{
		{"networkConfig", nil, "[extra-worker-0 [192.168.111.90 fd00::90]] [host 1 []]", ""},
		{"named override replaces", []string{"extra-worker-0=10.0.0.5"}, "[extra-worker-0 [10.0.0.5]] [host 1 []]", ""},
		{"index for a host without hostname", []string{"1=10.0.0.6", "1=10.0.0.7"}, "[extra-worker-0 [192.168.111.90 fd00::90]] [host 1 [10.0.0.6 10.0.0.7]]", ""},
		{"bare IP already known", []string{"192.168.111.90"}, "[extra-worker-0 [192.168.111.90 fd00::90]] [host 1 []]", ""},
		{"bare unknown IP with two hosts", []string{"10.0.0.8"}, "", "say which host it is, as HOSTNAME=10.0.0.8"},
		{"not an IP", []string{"extra-worker-0=nope"}, "", `"nope" is not an IP address`},
		{"unknown host", []string{"extra-worker-9=10.0.0.1"}, "", `"extra-worker-9" is neither a hostname nor a host index`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hosts, err := HostsFromConfig(cfg, tc.overrides)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hosts {
				got = append(got, fmt.Sprintf("[%s %v]", h.Label, ipStrings(h.IPs)))
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Fatalf("got %s, want %s", s, tc.want)
			}
		})
	}
	single, _ := nodesconfig.Parse(strings.NewReader(`hosts: [{hostname: a, interfaces: [{name: eth0, macAddress: "52:54:00:00:00:03"}]}]`))
	hosts, err := HostsFromConfig(single, []string{"10.1.1.1"})
	if err != nil || len(hosts[0].IPs) != 1 || hosts[0].IPs[0].String() != "10.1.1.1" {
		t.Fatalf("bare IP with one host: %v %v", hosts, err)
	}
}

func node(name, ip string, ready bool) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
		},
	}
}

// A run started after the hosts joined ends at once: a host without hostname is
// found by its IP, and its Node name is learned.
func TestRunFindsNodesByIP(t *testing.T) {
	kube := fake.NewClientset(node("dhcp-worker", "127.0.0.1", true))
	var events []Event
	res, err := Run(context.Background(), Options{
		Hosts:        []Host{{Label: "host 0", IPs: []net.IP{net.ParseIP("127.0.0.1")}}},
		Kube:         kube,
		Timeout:      10 * time.Second,
		PollInterval: 100 * time.Millisecond,
		AssistedPort: 1, KubeletPort: 1, // nothing listens there
		OnEvent: func(e Event) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeAllReady || !res.Hosts[0].Ready || res.Hosts[0].Node != "dhcp-worker" || res.Hosts[0].Stage != StageNodeReady {
		t.Fatalf("result: %+v", res.Hosts[0])
	}
	var stages []Stage
	for _, e := range events {
		if e.Type == EventStage {
			stages = append(stages, e.Stage)
		}
	}
	if fmt.Sprint(stages) != fmt.Sprint([]Stage{StageReachable, StageNodeJoined, StageNodeReady}) {
		t.Fatalf("stages %v", stages)
	}
}

// An assisted-service that keeps reporting a failing validation ends the run
// with ValidationsFailing and the validation's message as the host's problem;
// the token goes in the watcher header only.
func TestRunValidationsFailing(t *testing.T) {
	var sawToken bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawToken = sawToken || r.Header.Get(WatcherAuthHeader) == "s3cret"
		if r.Header.Get(WatcherAuthHeader) != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		host := map[string]any{"id": "h", "status": "insufficient", "status_info": "no",
			"validations_info": `{"network":[{"id":"ntp-synced","status":"failure","message":"Host couldn't synchronize with any NTP server"}],"hardware":[{"id":"has-inventory","status":"success","message":"ok"}]}`}
		switch r.URL.Path {
		case AssistedBasePath + "/infra-envs":
			_ = json.NewEncoder(w).Encode([]any{map[string]any{"id": "ie"}})
		case AssistedBasePath + "/clusters":
			_ = json.NewEncoder(w).Encode([]any{map[string]any{"id": "c1", "kind": "AddHostsCluster"}})
		case AssistedBasePath + "/clusters/c1":
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "hosts": []any{host}})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)
	var msgs []string
	res, err := Run(context.Background(), Options{
		Hosts:     []Host{{Label: "extra-worker-0", Hostname: "extra-worker-0", IPs: []net.IP{net.ParseIP("127.0.0.1")}}},
		Kube:      fake.NewClientset(),
		AuthToken: "s3cret", Timeout: time.Second, PollInterval: 100 * time.Millisecond,
		AssistedPort: port, KubeletPort: 1,
		OnEvent: func(e Event) { msgs = append(msgs, e.Message) },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Hosts[0]
	if res.Outcome != OutcomeValidationsFailing || !strings.Contains(h.Problem, "ntp-synced: Host couldn't synchronize") || h.AssistedStatus != "insufficient" {
		t.Fatalf("outcome %s, host %+v", res.Outcome, h)
	}
	if !sawToken {
		t.Fatal("token not sent in the watcher header")
	}
	failingEvents := 0
	for _, m := range msgs {
		if strings.Contains(m, "validation ntp-synced failing") {
			failingEvents++
		}
		if strings.Contains(m, "s3cret") {
			t.Fatalf("token in event %q", m)
		}
	}
	if failingEvents != 1 {
		t.Fatalf("%d failing events for one unchanged failure: %q", failingEvents, msgs)
	}
}

func TestReadAuthToken(t *testing.T) {
	sec := func(data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: AuthTokenSecret, Namespace: AuthTokenNamespace}, Data: data}
	}
	tok, err := ReadAuthToken(context.Background(), fake.NewClientset(sec(map[string][]byte{"agentAuthToken": []byte("agent"), "watcherAuthToken": []byte("watcher")})))
	if err != nil || tok != "watcher" {
		t.Fatalf("got %q, %v; want the watcher token", tok, err)
	}
	tok, err = ReadAuthToken(context.Background(), fake.NewClientset(sec(map[string][]byte{"agentAuthToken": []byte("agent")})))
	if err != nil || tok != "agent" {
		t.Fatalf("got %q, %v; want the agent token", tok, err)
	}
	if _, err := ReadAuthToken(context.Background(), fake.NewClientset()); err == nil || !strings.Contains(err.Error(), "openshift-config/agent-auth-token") {
		t.Fatalf("missing secret: %v", err)
	}
}

// Each version's token goes in the header its service reads: a 4.17 token
// (no auth_scheme claim) in Authorization, a 4.18+ watcher token in
// Watcher-Authorization (assisted-service release-4.17 and release-4.18
// swagger.yaml securityDefinitions; release-4.18 agent_local_authz_handler.go).
func TestAuthHeaderFor(t *testing.T) {
	now := time.Now()
	single, err := authtoken.Mint(authtoken.KindSingle, "ie", now)
	if err != nil {
		t.Fatal(err)
	}
	per, err := authtoken.Mint(authtoken.KindPerScheme, "", now)
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]string{single.Agent: "Authorization", per.Watcher: "Watcher-Authorization", per.User: "Authorization", "opaque": "Watcher-Authorization"} {
		if got := AuthHeaderFor(tok); got != want {
			t.Errorf("%.20s...: header %s, want %s", tok, got, want)
		}
	}
}
