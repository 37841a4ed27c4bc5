package atreboot

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Systemd is what Arm, Disarm and Hold ask of the service manager: systemctl
// with arguments, its standard output returned.
type Systemd interface {
	Systemctl(ctx context.Context, args ...string) (string, error)
}

// Systemctl runs the systemctl binary (Path, or "systemctl" on PATH).
type Systemctl struct{ Path string }

// Systemctl runs systemctl args; a failure quotes what it printed.
func (s Systemctl) Systemctl(ctx context.Context, args ...string) (string, error) {
	bin := s.Path
	if bin == "" {
		bin = "systemctl"
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return out.String(), fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return out.String(), nil
}

// showProps reads properties of a unit (systemctl show -p ...).
func showProps(ctx context.Context, sd Systemd, unit string, props ...string) (map[string]string, error) {
	args := []string{"show"}
	for _, p := range props {
		args = append(args, "-p", p)
	}
	out, err := sd.Systemctl(ctx, append(args, "--", unit)...)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m, nil
}

// parseTimespan reads a systemd time span as systemctl show prints it
// ("30min", "1min 10s", "500ms", "infinity"); infinity is 0 with inf true.
func parseTimespan(s string) (d time.Duration, inf bool, err error) {
	s = strings.TrimSpace(s)
	if s == "infinity" {
		return 0, true, nil
	}
	if s == "" {
		return 0, false, fmt.Errorf("empty time span")
	}
	units := []struct {
		suffix string
		d      time.Duration
	}{ // longer suffixes first: "min" before "m", "ms" before "s"
		{"usec", time.Microsecond}, {"msec", time.Millisecond}, {"min", time.Minute}, {"sec", time.Second},
		{"us", time.Microsecond}, {"ms", time.Millisecond}, {"h", time.Hour}, {"d", 24 * time.Hour},
		{"w", 7 * 24 * time.Hour}, {"s", time.Second}, {"m", time.Minute},
	}
	for _, f := range strings.Fields(s) {
		i := strings.IndexFunc(f, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		num, unit := f, "s"
		if i >= 0 {
			num, unit = f[:i], f[i:]
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || num == "" {
			return 0, false, fmt.Errorf("time span %q", s)
		}
		found := false
		for _, u := range units {
			if unit == u.suffix {
				d += time.Duration(v * float64(u.d))
				found = true
				break
			}
		}
		if !found {
			return 0, false, fmt.Errorf("time span %q: unit %q", s, unit)
		}
	}
	return d, false, nil
}

// ShuttingDown reports whether the service manager is stopping the system
// (systemctl is-system-running prints "stopping"): the armed units act only
// then, never when someone stops them on a running system.
func ShuttingDown(ctx context.Context, sd Systemd) bool {
	out, _ := sd.Systemctl(ctx, "is-system-running")
	return strings.TrimSpace(out) == "stopping"
}
