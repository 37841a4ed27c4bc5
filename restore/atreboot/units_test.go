package atreboot

import (
	"strings"
	"testing"
	"time"
)

func testSpec(mode Mode) *Spec {
	return &Spec{
		Version: SpecVersion, Mode: mode, Binary: "/usr/local/bin/kubectl-assisted",
		Args: []string{"--to=reg.example.com/a/b:v1", "--db=postgres://admin:node0-secret@127.0.0.1:5432/installer", "--target-db=postgres://admin:c0-secret@10.0.0.5/installer"},
		Ref:  "reg.example.com/a/b:v1", Target: "https://c0:6443", Namespace: "multicluster-engine",
		StateDir: "/var/lib/kubectl-assisted/state", Kubeconfig: "/root/cluster0.kubeconfig",
		DataDir: "/var/lib/containers/data", CaptureDir: "/var/spool/kubectl-assisted/at-reboot-data",
		ExtraMounts: []string{"/mnt/cluster0-data"},
		Timeout:     Duration(10 * time.Minute), HardLimit: Duration(12*time.Minute + 50*time.Second), CaptureTimeout: Duration(5 * time.Minute),
	}
}

// directives returns the values of key in a unit's text, in order.
func directives(text, key string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k == key {
			out = append(out, v)
		}
	}
	return out
}

// TestUnits_OrderedBetweenTheInstallersUnits pins what makes the hold work
// at a reboot: the ordering against the installer's units (after the
// database, before the service; the capture after the service), systemd's
// default dependencies kept, node 0 only, and no secret in the text.
func TestUnits_OrderedBetweenTheInstallersUnits(t *testing.T) {
	s := testSpec(ModeAuto)
	units, err := Units(s, "/etc/kubectl-assisted/at-reboot/armed.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 2 || units[0].Name != HoldUnit || units[1].Name != CaptureUnit {
		t.Fatalf("units %v", units)
	}
	hold, capture := units[0].Text, units[1].Text
	for _, u := range units {
		if d := directives(u.Text, "DefaultDependencies"); len(d) > 0 {
			t.Errorf("%s sets DefaultDependencies: without the default Conflicts=/Before=shutdown.target the reboot does not wait", u.Name)
		}
		if c := directives(u.Text, "ConditionPathExists"); strings.Join(c, " ") != "|/etc/assisted/node0 |/etc/assisted-service/node0" {
			t.Errorf("%s: ConditionPathExists %v", u.Name, c)
		}
		for _, secret := range []string{"node0-secret", "c0-secret", "postgres://"} {
			if strings.Contains(u.Text, secret) {
				t.Errorf("%s holds %q", u.Name, secret)
			}
		}
		if directives(u.Text, "Type")[0] != "oneshot" || directives(u.Text, "RemainAfterExit")[0] != "yes" {
			t.Errorf("%s: not an active oneshot", u.Name)
		}
	}
	after := strings.Fields(directives(hold, "After")[0])
	if !contains(after, DBUnit) || !contains(after, "network-online.target") || contains(after, ServiceUnit) {
		t.Errorf("hold After=%v: want the database and the network, not the service", after)
	}
	if b := directives(hold, "Before"); len(b) != 1 || b[0] != ServiceUnit {
		t.Errorf("hold Before=%v, want %s (so it stops after the service)", b, ServiceUnit)
	}
	if got := directives(hold, "ExecStop"); len(got) != 1 || got[0] != "/usr/local/bin/kubectl-assisted at-reboot hold --spec /etc/kubectl-assisted/at-reboot/armed.json" {
		t.Errorf("hold ExecStop %v", got)
	}
	if got := directives(hold, "TimeoutStopSec"); len(got) != 1 || got[0] != "770s" {
		t.Errorf("hold TimeoutStopSec %v, want the hard limit 770s", got)
	}
	mounts := strings.Fields(directives(hold, "RequiresMountsFor")[0])
	for _, p := range []string{"/var/lib/kubectl-assisted/state", "/mnt/cluster0-data", "/root", "/usr/local/bin", "/var/spool/kubectl-assisted"} {
		if !contains(mounts, p) {
			t.Errorf("hold RequiresMountsFor %v lacks %s", mounts, p)
		}
	}
	cafter := strings.Fields(directives(capture, "After")[0])
	if !contains(cafter, ServiceUnit) || !contains(cafter, HoldUnit) {
		t.Errorf("capture After=%v: it must stop before the service (and the hold)", cafter)
	}
	if got := directives(capture, "ExecStop"); len(got) != 1 || !strings.HasSuffix(got[0], " at-reboot capture --spec /etc/kubectl-assisted/at-reboot/armed.json") {
		t.Errorf("capture ExecStop %v", got)
	}
	if got := directives(capture, "TimeoutStopSec"); got[0] != "300s" {
		t.Errorf("capture TimeoutStopSec %v", got)
	}
	again, _ := Units(s, "/etc/kubectl-assisted/at-reboot/armed.json")
	if again[0].Text != hold || again[1].Text != capture {
		t.Error("the same spec rendered different units")
	}
}

func TestUnits_ManualHasNoCaptureAndRefusesUnsafePaths(t *testing.T) {
	s := testSpec(ModeManual)
	s.CaptureDir = ""
	units, err := Units(s, "/etc/kubectl-assisted/at-reboot/armed.json")
	if err != nil || len(units) != 1 || units[0].Name != HoldUnit || !strings.Contains(units[0].Text, "receipt of the bundle you migrated") {
		t.Fatalf("manual: %v %v", units, err)
	}
	for _, bad := range []string{"relative/bin", "/opt/my bin/kubectl-assisted", "/opt/50%/kubectl-assisted", "/opt/$HOME/x"} {
		s := testSpec(ModeAuto)
		s.Binary = bad
		if _, err := Units(s, "/etc/kubectl-assisted/at-reboot/armed.json"); err == nil {
			t.Errorf("binary %q accepted", bad)
		}
	}
}

func TestParseTimespan(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30min": 30 * time.Minute, "5min": 5 * time.Minute, "1min 10s": 70 * time.Second, "1h 30min": 90 * time.Minute,
		"500ms": 500 * time.Millisecond, "90s": 90 * time.Second, "1d": 24 * time.Hour, "2.5s": 2500 * time.Millisecond, "300": 300 * time.Second,
	} {
		got, inf, err := parseTimespan(in)
		if err != nil || inf || got != want {
			t.Errorf("%q: %v %v %v, want %v", in, got, inf, err, want)
		}
	}
	if _, inf, err := parseTimespan("infinity"); !inf || err != nil {
		t.Errorf("infinity: %v %v", inf, err)
	}
	for _, bad := range []string{"", "5 parsecs", "min"} {
		if _, _, err := parseTimespan(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
