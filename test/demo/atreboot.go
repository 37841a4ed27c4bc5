package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/restore/atreboot"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// Node 0's paths for -at-reboot, where a user on node 0 would put them.
const (
	atRebootKubeconfig = "/root/cluster0.kubeconfig"
	atRebootCA         = "/root/registry-ca.pem"
	atRebootStateDir   = "/var/lib/kubectl-assisted/migrate"
	atRebootSpoolDir   = "/var/lib/kubectl-assisted/spool"
	atRebootASC        = "/root/agentserviceconfig.yaml"
)

// startNode0Container is node 0 for -at-reboot: a systemd container with the
// agent-based installer's units (harness.StartNode0), its PostgreSQL as
// assisted-service-db.service, cluster 0's storage mounted (direct restore).
func (d *demo) startNode0Container(s *stepRun) error {
	var opts harness.Node0Options
	if !d.opts.job {
		data := d.path("cluster0", "data")
		if err := mkdirs(data); err != nil {
			return err
		}
		opts.Bind = []string{data}
	}
	d.node0c = harness.StartNode0(d.r, opts)
	d.node0DB = d.node0c.URL("admin", databaseName)
	s.say("node 0:                  systemd container %s: systemd as PID 1 (systemd-nspawn), the agent-based installer's", d.node0c.Machine)
	s.say("                         units (node-zero, assisted-service-pod, -db, assisted-service; stand-ins), root %s", d.node0c.Root)
	s.say("node 0 PostgreSQL 15:    %s (assisted-service-db.service)", d.node0DB)
	return nil
}

// stepLine is a migrate step's last line: "[2/6] bundle: pushed ... (0.4s)".
var stepLine = regexp.MustCompile(`^\[(\d+)/\d+\] ([a-z]+): (.*) \(([0-9.]+)s\)$`)

// migrateAtReboot is step 3 with -at-reboot: arm node 0, reboot it as
// assisted-installer does, and read what systemd logged while the reboot was
// held.
func (d *demo) migrateAtReboot(s *stepRun) (*migration, error) {
	n := d.node0c
	kc, err := os.ReadFile(d.kubeconfig)
	if err != nil {
		return nil, err
	}
	n.WriteFile(d.r, atRebootKubeconfig, kc, 0o600)
	var regArgs []string
	if d.registry.PlainHTTP {
		regArgs = append(regArgs, "--plain-http")
	}
	if d.registry.CAFile != "" {
		ca, err := os.ReadFile(d.registry.CAFile)
		if err != nil {
			return nil, err
		}
		n.WriteFile(d.r, atRebootCA, ca, 0o644)
		regArgs = append(regArgs, "--ca-file", atRebootCA)
	}
	if d.registry.AuthFile != "" {
		// Where docker keeps it on node 0: arming pins it for the unit.
		auth, err := os.ReadFile(d.registry.AuthFile)
		if err != nil {
			return nil, err
		}
		n.WriteFile(d.r, "/root/.docker/config.json", auth, 0o600)
	}
	n.WaitServiceSession(d.r, time.Minute)
	s.say("node 0's assisted-service is running (a session on its database); the installer has written node 0's disk")

	// Node 0 as it is now, for step 4: its database and /data go with the reboot.
	if d.node0Counts, err = tableCounts(d.ctx, d.node0DB); err != nil {
		return nil, err
	}
	before := d.path("node0", "data-before-reboot")
	if err := mkdirs(before); err != nil {
		return nil, err
	}
	if out, err := exec.Command("cp", "-a", d.node0.dataDir+"/.", before).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy node 0's /data for the comparison: %v: %s", err, out)
	}
	d.node0.dataDir = before

	args := []string{"migrate", "--at-reboot", "--to", d.ref(), "--state-dir", atRebootStateDir, "--spool-dir", atRebootSpoolDir,
		"--db-env-file", harness.Node0EnvFile, "--data-dir", harness.Node0DataDir, "--manifests-dir", harness.Node0ManifestsDir,
		"--target-kubeconfig", atRebootKubeconfig, "-n", serviceNamespace, "--service-url", serviceURL}
	if d.cluster != nil {
		// As on a real install: at the reboot, the restore Job on cluster 0.
		asc, err := os.ReadFile(d.ascFile)
		if err != nil {
			return nil, err
		}
		n.WriteFile(d.r, atRebootASC, asc, 0o644)
		args = append(args, "--agent-service-config", atRebootASC)
	} else {
		args = append(args, "--target-db", d.cluster0DB, "--target-data-dir", d.path("cluster0", "data"))
	}
	args = append(args, regArgs...)
	done := s.command("kubectl assisted " + shellQuote(args) + "   # on node 0")
	r := n.ExecWith(d.r, harness.ExecOptions{Timeout: 2 * time.Minute}, append([]string{harness.Node0Binary}, args...)...)
	done(r.ExitCode)
	d.rec.record(r.Stdout)
	d.rec.record(r.Stderr)
	if r.ExitCode != 0 {
		return nil, fmt.Errorf("`kubectl assisted migrate --at-reboot` failed (exit %d):\n%s", r.ExitCode, tail(r.Stderr+r.Stdout, 20))
	}
	s.block(r.Stdout)

	reboot := harness.Node0RebootCommand("+1")
	done = s.command(shellQuote(reboot) + "   # on node 0, as assisted-installer reboots it")
	asked := time.Now()
	n.MustExec(d.r, reboot...)
	done(0)
	s.say("node 0 reboots in a minute (the installer's shutdown -r +1); the reboot will wait for the migration ...")
	code, ended := n.Wait(d.r, 15*time.Minute)
	if code != 133 {
		return nil, fmt.Errorf("node 0 did not reboot: systemd-nspawn exited %d:\n%s", code, n.JournalText(d.r, "-n", "40"))
	}

	j := n.Journal(d.r)
	var holdStart, holdEnd time.Time
	m := &migration{Via: "kubectl assisted migrate --at-reboot (run by systemd at node 0's reboot)", ServiceURL: serviceURL}
	var failed []string
	for _, e := range j {
		switch {
		case e.Unit == "init.scope" || e.Ident == "systemd":
			if strings.HasPrefix(e.Message, "Stopping "+atreboot.HoldUnit) {
				holdStart = e.Time
			}
			if strings.HasPrefix(e.Message, "Stopped "+atreboot.HoldUnit) {
				holdEnd = e.Time
			}
		case e.Unit == atreboot.HoldUnit:
			if ref, ok := strings.CutPrefix(e.Message, "migrated: cluster 0 holds the receipt of "); ok {
				m.Digest = ref[strings.LastIndex(ref, "@")+1:]
			}
			if strings.HasPrefix(e.Message, "attempt ") && strings.Contains(e.Message, " failed: ") {
				failed = append(failed, e.Message)
			}
			if g := stepLine.FindStringSubmatch(e.Message); g != nil {
				secs, _ := strconv.ParseFloat(g[4], 64)
				m.Steps = append(m.Steps, migrationStep{Name: g[2], State: "done", Detail: g[3], DurationSeconds: secs})
			}
		}
	}
	journal := n.JournalText(d.r, "--since", holdStart.Add(-2*time.Second).Format("2006-01-02 15:04:05"),
		"-u", atreboot.CaptureUnit, "-u", "assisted-service.service", "-u", atreboot.HoldUnit, "-u", "assisted-service-db.service")
	d.rec.record(journal)
	s.say("node 0's journal while its reboot was held (journalctl -u ...):")
	s.block(journal)
	if m.Digest == "" {
		return nil, fmt.Errorf("the migration did not complete at the reboot (%d failed attempt(s))", len(failed))
	}
	if d.cluster != nil {
		m.Via = "kubectl assisted migrate --at-reboot (run by systemd at node 0's reboot; restore Job on the node)"
		if err := d.serveCluster0(s); err != nil {
			return nil, err
		}
	}
	held := holdEnd.Sub(holdStart)
	s.say("the reboot was asked at %s, began a minute later, and waited %s for the migration; node 0 rebooted %s after",
		asked.Format(time.TimeOnly), held.Round(time.Millisecond), ended.Sub(holdEnd).Round(time.Millisecond))
	d.sum.Notes = append(d.sum.Notes, fmt.Sprintf("node 0 (systemd %s in a container) ran the migration at its own reboot, which waited %s for cluster 0's receipt",
		systemdVersion(n), held.Round(time.Millisecond)))
	return m, nil
}

// systemdVersion is the container's systemd version, read from its root.
func systemdVersion(n *harness.Node0) string {
	out, err := exec.Command(n.Path("/usr/lib/systemd/systemd"), "--version").Output()
	if f := strings.Fields(string(out)); err == nil && len(f) > 1 {
		return f[1]
	}
	return "?"
}
