package atreboot

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Unit is one unit file Arm writes.
type Unit struct {
	Name string
	Text string
}

// Units renders the unit files of spec, whose spec file is at specPath:
// the hold unit, and in auto mode with a data directory the capture unit.
// The texts hold paths only, never a secret, and no time: the same spec
// renders the same bytes.
func Units(spec *Spec, specPath string) ([]Unit, error) {
	for _, p := range append([]string{spec.Binary, specPath}, spec.Mounts()...) {
		if err := unitSafePath(p); err != nil {
			return nil, err
		}
	}
	bin, sp := spec.Binary, specPath
	var conds strings.Builder
	for _, m := range NodeZeroMarkers {
		// "|": a triggering condition, true when any of them is.
		fmt.Fprintf(&conds, "ConditionPathExists=|%s\n", m)
	}
	what, description := "runs the migration", "kubectl-assisted: move node 0's assisted-service to cluster 0 before node 0 reboots"
	if spec.Mode == ModeManual {
		what = "waits until cluster 0 holds the receipt of the bundle you migrated"
		description = "kubectl-assisted: hold node 0's reboot until cluster 0 has restored node 0's assisted-service"
	}
	hold := fmt.Sprintf(`# Written by "kubectl assisted migrate --at-reboot=%[1]s"; "kubectl assisted migrate --disarm"
# removes it. Settings and secrets are in %[2]s (0600), never here.
#
# At node 0's reboot systemd stops this unit after %[3]s (assisted-service has
# stopped writing) and before %[4]s (its database still answers). Its ExecStop
# %[5]s; the reboot waits for it, for at most TimeoutStopSec. Systemd's default
# dependencies (Conflicts= and Before=shutdown.target) are what make the reboot wait:
# a unit with DefaultDependencies=no would not hold it.
[Unit]
Description=%[6]s
Documentation=https://github.com/kubectl-assisted/kubectl-assisted/blob/main/docs/migrate.md
%[7]sWants=network-online.target
After=network-online.target network.target %[4]s
Before=%[3]s
RequiresMountsFor=%[8]s

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%[9]s at-reboot armed --spec %[10]s
ExecStop=%[9]s at-reboot hold --spec %[10]s
TimeoutStopSec=%[11]s
`, spec.Mode, sp, ServiceUnit, DBUnit, what, description, conds.String(),
		strings.Join(spec.holdMounts(sp), " "), bin, sp, unitSeconds(spec.HardLimit.D()))
	units := []Unit{{Name: HoldUnit, Text: hold}}
	if spec.CaptureDir != "" {
		capture := fmt.Sprintf(`# Written by "kubectl assisted migrate --at-reboot"; "kubectl assisted migrate --disarm"
# removes it.
#
# assisted-service keeps its files in its container's writable layer, which podman
# removes when %[1]s stops (podman run --rm). At node 0's reboot systemd
# stops this unit first, before %[1]s: its ExecStop copies %[2]s to
# %[3]s, which %[4]s then bundles.
[Unit]
Description=kubectl-assisted: copy node 0's assisted-service files before assisted-service stops
Documentation=https://github.com/kubectl-assisted/kubectl-assisted/blob/main/docs/migrate.md
%[5]sAfter=%[1]s %[4]s
RequiresMountsFor=%[6]s

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=%[7]s at-reboot armed --spec %[8]s --unit capture
ExecStop=%[7]s at-reboot capture --spec %[8]s
TimeoutStopSec=%[9]s
`, ServiceUnit, spec.DataDir, spec.CaptureDir, HoldUnit, conds.String(),
			strings.Join(uniqueSorted([]string{spec.DataDir, filepath.Dir(spec.CaptureDir), filepath.Dir(bin)}), " "),
			bin, sp, unitSeconds(spec.CaptureTimeout.D()))
		units = append(units, Unit{Name: CaptureUnit, Text: capture})
	}
	return units, nil
}

// Mounts are the local paths the migration reads or writes at the reboot:
// the hold unit requires their mounts, so they stay mounted until it ends.
func (s *Spec) Mounts() []string {
	var ps []string
	for _, p := range []string{s.StateDir, s.DataDir, s.CaptureDir, s.Kubeconfig} {
		if p != "" {
			ps = append(ps, p)
		}
	}
	return append(ps, s.ExtraMounts...)
}

func (s *Spec) holdMounts(specPath string) []string {
	ps := []string{filepath.Dir(s.Binary), filepath.Dir(specPath)}
	for _, p := range s.Mounts() {
		if p == s.Kubeconfig || p == s.CaptureDir {
			p = filepath.Dir(p)
		}
		ps = append(ps, p)
	}
	return uniqueSorted(ps)
}

func uniqueSorted(ps []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// unitSeconds is a duration as a unit file's time span ("750s").
func unitSeconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int64((d+time.Second-1)/time.Second))
}

// unitSafePath refuses what a unit file would need to quote or escape: an
// armed path must be absolute and plain.
func unitSafePath(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path", p)
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(`"'\$%;`+"`", r) {
			return fmt.Errorf("path %q has a character a systemd unit would have to escape (%q): use a path of letters, digits and -_./+:@=,", p, r)
		}
	}
	return nil
}
