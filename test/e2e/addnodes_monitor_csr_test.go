package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-assisted/kubectl-assisted/day2/monitor"
	"github.com/kubectl-assisted/kubectl-assisted/test/fakehost"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// eventLog collects the monitor's events for assertions.
type eventLog struct {
	mu     sync.Mutex
	events []monitor.Event
}

func (l *eventLog) add(e monitor.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// csrMessage is the last message the monitor gave about a CSR.
func (l *eventLog) csrMessage(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := ""
	for _, e := range l.events {
		if e.CSR == name && e.Type == monitor.EventCSR {
			msg = e.Message
		}
	}
	return msg
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAddNodesMonitor_CSRApproval runs the monitor with approval on against the
// real kube-apiserver. Real x509 CSRs, created as the identities a kubelet uses
// (the node-bootstrapper service account, system:node:<name>), are approved for
// the hosts of nodes-config; every malicious or mistaken variant is never
// approved, and the monitor says why for each.
func TestAddNodesMonitor_CSRApproval(t *testing.T) {
	k := harness.SharedKube(t)
	admin := k.Clientset(t)
	fakehost.AllowCSRCreation(t, admin, "kat-monitor-csr-requesters", harness.BootstrapperUser, harness.NobodyUser)
	ipA, ipB, ipC := fakehost.LoopbackIP(), fakehost.LoopbackIP(), fakehost.LoopbackIP()
	hosts := []monitor.Host{
		{Label: "extra-worker-0", Hostname: "extra-worker-0", IPs: []net.IP{ipA}},
		{Label: "extra-worker-1", Hostname: "extra-worker-1", IPs: []net.IP{ipB}},
		// A mistake in nodes-config: this name is already a Node of the cluster.
		{Label: "worker-0", Hostname: "worker-0", IPs: []net.IP{ipC}},
	}
	fakehost.CreateNode(t, admin, "worker-0", "10.9.9.9")
	var created []string
	fakehost.DeleteCSRsAtEnd(t, admin, &created)

	log := &eventLog{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *monitor.Result, 1)
	go func() {
		res, err := monitor.Run(ctx, monitor.Options{
			Hosts: hosts, Kube: admin, ApproveCSRs: true, Timeout: 10 * time.Minute,
			PollInterval: 200 * time.Millisecond, OnEvent: log.add,
		})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()

	boot := k.ConfigFor(harness.BootstrapperUser)
	node := func(n string) *rest.Config { return k.ConfigFor("system:node:" + n) }
	suffix := "-" + strings.ReplaceAll(ipA.String(), ".", "-")
	create := func(as *rest.Config, c fakehost.CSR) string {
		c.Name += suffix
		c.Create(t, as)
		created = append(created, c.Name)
		return c.Name
	}
	approved := func(name string) bool { ok, _, _ := fakehost.Approved(t, admin, name); return ok }
	mustBeApproved := func(name, host string) {
		t.Helper()
		waitFor(t, "approval of "+name, func() bool { return approved(name) })
		_, reason, msg := fakehost.Approved(t, admin, name)
		if reason != monitor.ApprovedReason || !strings.Contains(msg, "new host "+host) {
			t.Errorf("%s: approval condition reason %q message %q", name, reason, msg)
		}
	}

	// The real kubelet's first CSR.
	mustBeApproved(create(boot, fakehost.ClientCSR("kat-client-ok", "extra-worker-0")), "extra-worker-0")

	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	with := func(c fakehost.CSR, f func(*fakehost.CSR)) fakehost.CSR { f(&c); return c }
	client1 := fakehost.ClientCSR("", "extra-worker-1")
	serving0 := fakehost.ServingCSR("", "extra-worker-0", ipA.String())
	serving1 := fakehost.ServingCSR("", "extra-worker-1", ipB.String())
	variants := []struct {
		name string
		as   *rest.Config
		csr  fakehost.CSR
		why  string
	}{
		{"host not in nodes-config", boot, fakehost.ClientCSR("", "attacker"), `node "attacker" is not a host of nodes-config.yaml`},
		{"CN without system:node: prefix", boot, with(client1, func(c *fakehost.CSR) { c.CN = "extra-worker-1" }), "names no node"},
		{"O system:masters", boot, with(client1, func(c *fakehost.CSR) { c.Org = []string{"system:masters"} }), `organization is ["system:masters"]`},
		{"extra O", boot, with(client1, func(c *fakehost.CSR) { c.Org = []string{"system:nodes", "system:masters"} }), "not exactly [system:nodes]"},
		{"OU in subject", boot, with(client1, func(c *fakehost.CSR) { c.OU = []string{"ops"} }), "attributes besides CN and O"},
		{"client CSR with a SAN", boot, with(client1, func(c *fakehost.CSR) { c.DNS = []string{"extra-worker-1"} }), "kubelet client certificates have none"},
		{"client CSR asking server auth too", boot, with(client1, func(c *fakehost.CSR) { c.Usages = append(c.Usages, "server auth") }), "usages are"},
		{"requested by an unrelated user", k.ConfigFor(harness.NobodyUser), client1, `requested by "kat-nobody"`},
		{"requested by another node", node("attacker"), client1, `requested by "system:node:attacker"`},
		{"weak RSA 1024 key", boot, with(client1, func(c *fakehost.CSR) { c.Key = rsa1024 }), "key RSA 1024 is not acceptable"},
		{"Ed25519 key", boot, with(client1, func(c *fakehost.CSR) { c.Key = ed }), "key Ed25519 is not acceptable"},
		{"P-224 key", boot, with(client1, func(c *fakehost.CSR) { c.Key = p224 }), "key ECDSA P-224 is not acceptable"},
		{"wrong signer", boot, with(client1, func(c *fakehost.CSR) { c.Signer = "kubernetes.io/kube-apiserver-client" }), "is not a kubelet signer"},
		{"CN of an existing node", boot, fakehost.ClientCSR("", "worker-0"), `Node "worker-0" already exists`},
		{"second client CSR for an approved host", boot, fakehost.ClientCSR("", "extra-worker-0"), "already has an approved client CSR (kat-client-ok" + suffix + ")"},
		{"serving CSR with a foreign IP", node("extra-worker-0"), fakehost.ServingCSR("", "extra-worker-0", ipB.String()), "IP SAN " + ipB.String() + " is not one of the host's IPs"},
		{"serving CSR with an extra DNS SAN", node("extra-worker-0"), with(serving0, func(c *fakehost.CSR) { c.DNS = append(c.DNS, "kubernetes.default.svc") }), `DNS SAN "kubernetes.default.svc"`},
		{"serving CSR by the bootstrapper", boot, serving1, "not by the node itself"},
		{"serving CSR with another host's CN", node("extra-worker-1"), with(serving1, func(c *fakehost.CSR) { c.CN = "system:node:extra-worker-0" }), `CN is "system:node:extra-worker-0"`},
		{"serving CSR asking client auth too", node("extra-worker-0"), with(serving0, func(c *fakehost.CSR) { c.Usages = append(c.Usages, "client auth") }), "usages are"},
		{"another node posing with the host's IP", node("attacker"), with(serving1, func(c *fakehost.CSR) {}), `requested by "system:node:attacker", not by the node itself`},
		{"serving CSR of a node not in nodes-config", node("attacker"), fakehost.ServingCSR("", "attacker", "10.9.9.10"), `node "attacker" is not a host`},
	}
	for i, v := range variants {
		v.csr.Name = "kat-bad-" + itoa(i)
		name := create(v.as, v.csr)
		waitFor(t, "the monitor's word on "+v.name, func() bool { return log.csrMessage(name) != "" })
		msg := log.csrMessage(name)
		t.Logf("%s: %s", v.name, msg)
		if !strings.Contains(msg, v.why) || !strings.HasPrefix(msg, "not approving") {
			t.Errorf("%s (%s): monitor said %q, want it to say %q", v.name, name, msg, v.why)
		}
	}

	// The second CSR of the real kubelet, then a duplicate of it.
	mustBeApproved(create(node("extra-worker-0"), fakehost.ServingCSR("kat-serving-ok", "extra-worker-0", ipA.String())), "extra-worker-0")
	dup := create(node("extra-worker-0"), fakehost.ServingCSR("kat-serving-dup", "extra-worker-0", ipA.String()))
	waitFor(t, "the monitor's word on the duplicate", func() bool { return log.csrMessage(dup) != "" })
	if msg := log.csrMessage(dup); !strings.Contains(msg, "already has an approved serving CSR") {
		t.Errorf("duplicate serving CSR: monitor said %q", msg)
	}

	cancel()
	res := <-done
	if res == nil || res.Outcome != monitor.OutcomeInterrupted {
		t.Fatalf("result: %+v", res)
	}
	// Never approved, re-checked after every decision was made.
	for i := range variants {
		if name := "kat-bad-" + itoa(i) + suffix; approved(name) {
			t.Errorf("%s (%s) was approved", variants[i].name, name)
		}
	}
	if approved(dup) {
		t.Error("duplicate serving CSR was approved")
	}
	// The summary lists each host's CSRs with the decision.
	decisions := map[string]string{}
	for _, h := range res.Hosts {
		for _, c := range h.CSRs {
			decisions[c.Name] = c.Decision
		}
	}
	for _, c := range res.OtherCSRs {
		decisions[c.Name] = c.Decision
	}
	if decisions["kat-client-ok"+suffix] != "approved" || decisions["kat-serving-ok"+suffix] != "approved" || decisions[dup] != "refused" {
		t.Errorf("summary decisions: %v", decisions)
	}
	if len(variants) < 15 {
		t.Fatalf("only %d variants", len(variants))
	}

	// Only while the monitor runs: a valid CSR created after it stopped stays pending.
	late := create(boot, fakehost.ClientCSR("kat-client-late", "extra-worker-1"))
	time.Sleep(time.Second)
	if approved(late) {
		t.Error("a CSR was approved after the monitor stopped")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
