package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/day2/monitor"
	"github.com/kubectl-assisted/kubectl-assisted/test/fakehost"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

type newHost struct {
	name string
	ip   net.IP
}

// writeNodesConfig writes a nodes-config.yaml whose hosts have a static IPv4
// address in their nmstate networkConfig, as a user would give them.
func writeNodesConfig(t *testing.T, hosts ...newHost) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("hosts:\n")
	for i, h := range hosts {
		mac := fmt.Sprintf("52:54:00:%02x:%02x:%02x", h.ip[13], h.ip[14], i)
		fmt.Fprintf(&b, `- hostname: %s
  role: worker
  interfaces:
  - name: eth0
    macAddress: %s
  networkConfig:
    interfaces:
    - name: eth0
      type: ethernet
      state: up
      mac-address: %s
      ipv4:
        enabled: true
        address:
        - ip: %s
          prefix-length: 24
        dhcp: false
`, h.name, mac, mac, h.ip)
	}
	p := filepath.Join(t.TempDir(), "nodes-config.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// agentAuthToken returns the token in Secret openshift-config/agent-auth-token,
// creating the Secret (as the ISO build does) when it does not exist yet.
func agentAuthToken(t *testing.T, admin kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: monitor.AuthTokenNamespace}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if tok, err := monitor.ReadAuthToken(ctx, admin); err == nil {
		return tok
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "kat-watch-" + hex.EncodeToString(b)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: monitor.AuthTokenSecret, Namespace: monitor.AuthTokenNamespace},
		Data:       map[string][]byte{"agentAuthToken": []byte(tok)},
	}
	if _, err := admin.CoreV1().Secrets(monitor.AuthTokenNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if tok, err = monitor.ReadAuthToken(ctx, admin); err != nil {
			t.Fatal(err)
		}
	}
	return tok
}

// running is the plugin binary running in the background, its stderr read
// line by line while it runs.
type running struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	lines  []string
	done   chan struct{}
	code   int
}

func startPlugin(t *testing.T, args ...string) *running {
	t.Helper()
	p := harness.NewPlugin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	r := &running{cmd: p.Command(ctx, args...), done: make(chan struct{})}
	r.cmd.Stdout = &r.stdout
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
		}
		err := r.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			r.code = -1
		}
		close(r.done)
	}()
	return r
}

func (r *running) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// waitLine waits until a stderr line contains every one of parts.
func (r *running) waitLine(t *testing.T, parts ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a stderr line with %q", parts), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, l := range r.lines {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return true
			}
		}
		select {
		case <-r.done:
			t.Fatalf("plugin exited (%d) before printing %q:\n%s", r.code, parts, strings.Join(r.lines, "\n"))
		default:
		}
		return false
	})
}

func (r *running) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(2 * time.Minute):
		t.Fatalf("plugin still running:\n%s", r.stderr())
		return 0
	}
}

// TestAddNodesMonitor_HappyPath runs the built binary through kubectl against
// two fake hosts (assisted-service REST per the swagger spec, kubelet port) and
// the real kube-apiserver: validations failing then passing, installation
// progress, reboot, kubelet, both CSRs (approved by the monitor), Node joined
// and Ready; the run ends by itself with exit code 0 and a JSON summary.
func TestAddNodesMonitor_HappyPath(t *testing.T) {
	k := harness.SharedKube(t)
	admin := k.Clientset(t)
	fakehost.AllowCSRCreation(t, admin, "kat-monitor-csr-requesters", harness.BootstrapperUser, harness.NobodyUser)
	token := agentAuthToken(t, admin)
	hosts := []newHost{{"extra-worker-2", fakehost.LoopbackIP()}, {"extra-worker-3", fakehost.LoopbackIP()}}
	apis := map[string]*fakehost.Assisted{}
	for _, h := range hosts {
		a := fakehost.StartAssisted(t, net.JoinHostPort(h.ip.String(), "8090"), token)
		a.Update(func(r *fakehost.Host) {
			r.Status, r.StatusInfo, r.RequestedHostname = "insufficient", "Host cannot be installed due to following failing validation(s): Host couldn't synchronize with any NTP server", h.name
			r.Validations = map[string][]fakehost.Validation{
				"hardware": {{ID: "has-min-cpu-cores", Status: "success", Message: "Sufficient CPU cores"}},
				"network": {
					{ID: "ntp-synced", Status: "failure", Message: "Host couldn't synchronize with any NTP server"},
					{ID: "ignition-downloadable", Status: "pending", Message: "Ignition is not yet available, pending API connectivity"},
				},
			}
		})
		apis[h.name] = a
	}
	var csrs []string
	fakehost.DeleteCSRsAtEnd(t, admin, &csrs)
	cfg := writeNodesConfig(t, hosts...)

	r := startPlugin(t, "add-nodes", "monitor", "-f", cfg, "--approve-csrs", "--poll-interval", "200ms",
		"--timeout", "4m", "-o", "json", "--kubeconfig", k.Kubeconfig)

	for _, h := range hosts {
		r.waitLine(t, h.name+": [AssistedServiceUp]")
		r.waitLine(t, h.name+": [validation] validation ntp-synced failing: Host couldn't synchronize with any NTP server")
		apis[h.name].Update(func(x *fakehost.Host) {
			x.Status, x.StatusInfo = "known", "Host is ready to be installed"
			x.Validations["network"][0] = fakehost.Validation{ID: "ntp-synced", Status: "success", Message: "Host NTP is synced"}
			x.Validations["network"][1] = fakehost.Validation{ID: "ignition-downloadable", Status: "success", Message: "Ignition is downloadable"}
		})
		r.waitLine(t, h.name+": [validation] validation ntp-synced passing")
		r.waitLine(t, h.name+": [ValidationsPassing]")
		apis[h.name].Update(func(x *fakehost.Host) {
			x.Status, x.StatusInfo = "installing-in-progress", "Writing image to disk"
			x.Stage, x.Percentage = "Writing image to disk", 42
		})
		r.waitLine(t, h.name+": [Installing]")
		r.waitLine(t, h.name+": [progress] installation stage Writing image to disk: 42%")
		apis[h.name].Update(func(x *fakehost.Host) { x.Stage, x.Percentage = "Rebooting", 80 })
		r.waitLine(t, h.name+": [progress] installation stage Rebooting")
	}
	for _, h := range hosts {
		apis[h.name].Stop() // the host reboots into the installed system
		fakehost.ListenKubelet(t, h.ip)
		r.waitLine(t, h.name+": [KubeletUp]")

		client := fakehost.ClientCSR("kat-happy-client-"+h.name+"-"+h.ip.String(), h.name).Create(t, k.ConfigFor(harness.BootstrapperUser))
		csrs = append(csrs, client.Name)
		r.waitLine(t, h.name+": [FirstCSRApproved]", client.Name, "by this monitor")

		fakehost.CreateNode(t, admin, h.name, h.ip.String())
		r.waitLine(t, h.name+": [NodeJoined]")
		serving := fakehost.ServingCSR("kat-happy-serving-"+h.name+"-"+h.ip.String(), h.name, h.ip.String()).Create(t, k.ConfigFor("system:node:"+h.name))
		csrs = append(csrs, serving.Name)
		r.waitLine(t, h.name+": [SecondCSRApproved]", serving.Name, "by this monitor")
	}
	for _, h := range hosts {
		fakehost.NodeReady(t, admin, h.name)
	}
	code := r.wait(t)
	t.Logf("stderr of the monitor:\n%s", r.stderr())
	if code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", code, r.stdout.String(), r.stderr())
	}

	var res struct {
		Kind     string `json:"kind"`
		ExitCode int    `json:"exitCode"`
		monitor.Result
	}
	if err := json.Unmarshal(r.stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, r.stdout.String())
	}
	if res.Kind != "AddNodesMonitorResult" || res.ExitCode != 0 || res.Outcome != monitor.OutcomeAllReady || len(res.Hosts) != 2 {
		t.Fatalf("summary: %s", r.stdout.String())
	}
	for _, h := range res.Hosts {
		var got []monitor.Stage
		for _, s := range h.Stages {
			got = append(got, s.Stage)
		}
		if fmt.Sprint(got) != fmt.Sprint(monitor.Stages) || !h.Ready || h.Node != h.Hostname {
			t.Errorf("%s: ready=%v node=%q stages %v, want every stage %v", h.Host, h.Ready, h.Node, got, monitor.Stages)
		}
		if h.InstallProgress == nil || h.InstallProgress.Stage != "Rebooting" || len(h.FailingValidations) != 0 {
			t.Errorf("%s: progress %+v failing validations %v", h.Host, h.InstallProgress, h.FailingValidations)
		}
		approved := 0
		for _, c := range h.CSRs {
			if c.State == "Approved" && c.Decision == "approved" {
				approved++
			}
		}
		if approved != 2 {
			t.Errorf("%s: CSRs %+v, want the client and the serving CSR approved by the monitor", h.Host, h.CSRs)
		}
	}
	for name, a := range apis {
		if a.Hits("/infra-envs") == 0 || a.Hits("/clusters") == 0 || a.Denied() != 0 {
			t.Errorf("%s: assisted-service saw %d infra-env reads, %d cluster reads, %d denied", name, a.Hits("/infra-envs"), a.Hits("/clusters"), a.Denied())
		}
	}
	if strings.Contains(r.stdout.String()+r.stderr(), token) {
		t.Error("the assisted-service token appears in the output")
	}
}

// TestAddNodesMonitor_ExitCodes checks, with the built binary, that the exit
// code says what held the hosts back.
func TestAddNodesMonitor_ExitCodes(t *testing.T) {
	k := harness.SharedKube(t)
	admin := k.Clientset(t)
	fakehost.AllowCSRCreation(t, admin, "kat-monitor-csr-requesters", harness.BootstrapperUser, harness.NobodyUser)
	token := agentAuthToken(t, admin)
	p := harness.NewPlugin(t)
	run := func(t *testing.T, args ...string) harness.Result {
		t.Helper()
		args = append([]string{"add-nodes", "monitor", "--poll-interval", "200ms", "--kubeconfig", k.Kubeconfig}, args...)
		return p.Run(t, args...)
	}
	expect := func(t *testing.T, res harness.Result, code int, parts ...string) {
		t.Helper()
		if res.ExitCode != code {
			t.Fatalf("exit code %d, want %d\n%s", res.ExitCode, code, res.Combined())
		}
		for _, s := range parts {
			if !strings.Contains(res.Combined(), s) {
				t.Errorf("output lacks %q:\n%s", s, res.Combined())
			}
		}
		if strings.Contains(res.Combined(), token) {
			t.Error("the assisted-service token appears in the output")
		}
	}

	t.Run("unreachable host times out with 30", func(t *testing.T) {
		cfg := writeNodesConfig(t, newHost{"worker-1", net.ParseIP("192.0.2.10")})
		res := run(t, "-f", cfg, "--timeout", "2s")
		expect(t, res, 30, "no answer from 192.0.2.10", "error: 1 of 1 hosts did not become Ready nodes (Timeout)")
	})
	t.Run("failing validations exit 33", func(t *testing.T) {
		ip := fakehost.LoopbackIP()
		a := fakehost.StartAssisted(t, net.JoinHostPort(ip.String(), "8090"), token)
		a.Update(func(h *fakehost.Host) {
			h.Status, h.RequestedHostname = "insufficient", "worker-1"
			h.Validations = map[string][]fakehost.Validation{"hardware": {{ID: "has-min-memory", Status: "failure", Message: "The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is 8.00 GiB, found only 4.00 GiB"}}}
		})
		res := run(t, "-f", writeNodesConfig(t, newHost{"worker-1", ip}), "--timeout", "3s", "-o", "json")
		expect(t, res, 33, `"outcome": "ValidationsFailing"`, `"id": "has-min-memory"`, "minimum required RAM")
	})
	t.Run("installation failure exits 35", func(t *testing.T) {
		ip := fakehost.LoopbackIP()
		a := fakehost.StartAssisted(t, net.JoinHostPort(ip.String(), "8090"), token)
		a.Update(func(h *fakehost.Host) {
			h.Status, h.StatusInfo, h.RequestedHostname = "error", "Host failed to install due to timeout while writing image to disk", "worker-1"
			h.Stage = "Failed"
		})
		res := run(t, "-f", writeNodesConfig(t, newHost{"worker-1", ip}), "--timeout", "3s")
		expect(t, res, 35, "installation failed: status error", "(InstallFailed)")
	})
	t.Run("unapproved CSR exits 34", func(t *testing.T) {
		var names []string
		fakehost.DeleteCSRsAtEnd(t, admin, &names)
		ip := fakehost.LoopbackIP()
		c := fakehost.ClientCSR("kat-exit-client-"+ip.String(), "worker-2").Create(t, k.ConfigFor(harness.BootstrapperUser))
		names = append(names, c.Name)
		cfg := writeNodesConfig(t, newHost{"worker-2", ip})
		// Without --approve-csrs: the monitor says it would approve, and does not.
		res := run(t, "-f", cfg, "--timeout", "3s")
		expect(t, res, 34, "passes every rule; approve it with --approve-csrs", "Run again with --approve-csrs")
		if ok, _, _ := fakehost.Approved(t, admin, c.Name); ok {
			t.Fatal("approved without --approve-csrs")
		}
		// With --approve-csrs, a CSR that breaks a rule blocks the host.
		bad := fakehost.ClientCSR("kat-exit-bad-"+ip.String(), "worker-3")
		bad.Usages = append(bad.Usages, "server auth")
		bad.Create(t, k.ConfigFor(harness.BootstrapperUser))
		names = append(names, bad.Name)
		res = run(t, "-f", writeNodesConfig(t, newHost{"worker-3", fakehost.LoopbackIP()}), "--approve-csrs", "--timeout", "3s")
		expect(t, res, 34, "CSRs not approved:", bad.Name, "usages are")
	})
	t.Run("bad --ip-addresses is a usage error", func(t *testing.T) {
		cfg := writeNodesConfig(t, newHost{"worker-1", fakehost.LoopbackIP()}, newHost{"worker-2", fakehost.LoopbackIP()})
		res := run(t, "-f", cfg, "--ip-addresses", "10.1.1.1")
		expect(t, res, 2, "say which host it is, as HOSTNAME=10.1.1.1")
	})
	t.Run("interrupt exits 130 with a summary", func(t *testing.T) {
		cfg := writeNodesConfig(t, newHost{"worker-1", net.ParseIP("192.0.2.11")})
		r := startPlugin(t, "add-nodes", "monitor", "-f", cfg, "--poll-interval", "200ms", "--kubeconfig", k.Kubeconfig, "-o", "yaml")
		time.Sleep(time.Second) // let it start; the assertion does not depend on timing
		_ = r.cmd.Process.Signal(syscall.SIGINT)
		if code := r.wait(t); code != 130 {
			t.Fatalf("exit code %d, want 130\n%s", code, r.stderr())
		}
		if !strings.Contains(r.stdout.String(), "outcome: Interrupted") {
			t.Errorf("summary: %s", r.stdout.String())
		}
	})
}
