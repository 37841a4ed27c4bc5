package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NMRootName is the cached root (test/tools/install.sh systemd, NSPAWN_ROOTS)
// that NMHost boots: Debian bookworm with systemd, D-Bus and Debian's
// network-manager 1.42.
const NMRootName = "nm"

// NMHost is NetworkManager as a host runs it: Debian's network-manager under
// systemd 252 as PID 1, in a systemd-nspawn container whose network namespace
// holds nothing but loopback and the NICs the test gives it. Each NIC is one
// end of a veth pair with the MAC the test chose; the other end lives in a
// second namespace (the "wire"), up, so the NIC has carrier, and can serve
// DHCP and router advertisements (dnsmasq) or answer pings.
//
// NetworkManager is installed but not started at boot: the test lays its
// files into Root, and StartNetworkManager starts it after the NICs exist,
// as on a machine whose NICs are there before NetworkManager runs. The
// container, the wire and every server die with the test process (a PID
// namespace around systemd-nspawn, and Pdeathsig), so an aborted run leaves
// nothing behind.
type NMHost struct {
	// Root is the container's root directory (a copy of the cached root).
	Root   string
	nspawn *Process // unshare --pid --fork --kill-child systemd-nspawn ...
	wire   *Process // unshare --net: holds the wire namespace
	leader int      // the container's PID 1, as the host sees it
	peers  map[string]string
	extra  []*Process
}

// NIC is a network card of an NMHost: its kernel name and its MAC address.
type NIC struct{ Name, MAC string }

// NMRoot returns the cached root directory, or skips (fails in CI) when
// make tools has not built it or this process cannot run containers.
func NMRoot(t testing.TB) string {
	t.Helper()
	root := SystemdRootDir(NMRootName)
	if err := systemdUsable(root); err != nil {
		Unavailable(t, "systemd-nspawn with the NetworkManager root", err)
	}
	if _, err := os.Stat(filepath.Join(root, "usr", "sbin", "NetworkManager")); err != nil {
		Unavailable(t, "NetworkManager root "+root, err)
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			Unavailable(t, tool, err)
		}
	}
	return root
}

// NMVersion is the version of the network-manager package in the cached
// root, as its dpkg database records it.
func NMVersion(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(NMRoot(t), "var", "lib", "dpkg", "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stanza := range strings.Split(string(b), "\n\n") {
		if !strings.Contains(stanza, "Package: network-manager\n") {
			continue
		}
		for _, l := range strings.Split(stanza, "\n") {
			if v, ok := strings.CutPrefix(l, "Version: "); ok {
				return v
			}
		}
	}
	t.Fatal("no network-manager in the root's dpkg database")
	return ""
}

// StartNMHost copies the cached root, lets prepare lay files into the copy,
// boots it and plugs in the NICs (names of at most 15 characters).
func StartNMHost(t testing.TB, nics []NIC, prepare func(root string)) *NMHost {
	t.Helper()
	cached, err := filepath.EvalSymlinks(NMRoot(t)) // install.sh links the root's versioned directory
	if err != nil {
		t.Fatal(err)
	}
	h := &NMHost{Root: filepath.Join(t.TempDir(), "root"), peers: map[string]string{}}
	if out, err := exec.Command("cp", "-a", cached, h.Root).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", cached, err, out)
	}
	h.configure(t)
	if prepare != nil {
		prepare(h.Root)
	}
	cg, err := newNspawnCgroup("kat-nm")
	if err != nil {
		Unavailable(t, "a cgroup for systemd-nspawn", err)
	}
	t.Cleanup(cg.remove) // registered before h.stop, so it runs after it
	t.Cleanup(h.stop)

	wire, err := StartProcess("wire namespace", exec.Command("unshare", "--net", "sleep", "infinity"))
	if err != nil {
		t.Fatal(err)
	}
	h.wire = wire
	// PID 1 of a PID namespace of its own: when it dies (the test process
	// died, so unshare did, so --kill-child killed systemd-nspawn), the kernel
	// kills the whole container with it.
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "systemd-nspawn",
		"--register=no", "--keep-unit", "--quiet", "-D", h.Root, "-M", "kat-nm", "-b", "--console=passive",
		"--private-network", "--resolv-conf=off", "--timezone=off", "--link-journal=no")
	cg.wrap(cmd)
	if h.nspawn, err = StartProcess("systemd-nspawn", cmd); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(h.nspawn, 60*time.Second, h.booted); err != nil {
		t.Fatalf("container did not boot: %v", err)
	}
	for i, nic := range nics {
		peer := fmt.Sprintf("wire%d", i)
		if out, err := exec.Command("ip", "link", "add", "name", nic.Name, "address", nic.MAC, "netns", strconv.Itoa(h.leader),
			"type", "veth", "peer", "name", peer, "netns", strconv.Itoa(h.wire.Cmd.Process.Pid)).CombinedOutput(); err != nil {
			t.Fatalf("NIC %s (%s): %v\n%s", nic.Name, nic.MAC, err, out)
		}
		h.peers[nic.Name] = peer
		h.Wire(t, "ip", "link", "set", peer, "up")
	}
	return h
}

// configure makes the copy boot the way the test needs: no getty on the
// console, NetworkManager not started at boot (StartNetworkManager starts it once the NICs exist),
// profiles read from keyfiles only, no automatic DHCP profile on NICs
// without one (so what is active is what the keyfiles say), no dispatcher
// script of ifupdown, and /etc/resolv.conf left to NetworkManager.
func (h *NMHost) configure(t testing.TB) {
	t.Helper()
	gettys, _ := filepath.Glob(filepath.Join(h.Root, "etc/systemd/system/getty.target.wants/*"))
	for _, p := range gettys {
		_ = os.Remove(p)
	}
	for _, p := range []string{"etc/systemd/system/multi-user.target.wants/NetworkManager.service",
		"etc/NetworkManager/dispatcher.d/01-ifupdown", "etc/resolv.conf"} {
		if err := os.Remove(filepath.Join(h.Root, p)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	conf := "[main]\nplugins=keyfile\nno-auto-default=*\n\n[logging]\nlevel=INFO\n"
	if err := os.WriteFile(filepath.Join(h.Root, "etc/NetworkManager/conf.d/90-kat-test.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

// booted finds the container's PID 1 and reports whether systemd is up.
func (h *NMHost) booted() error {
	if h.leader == 0 {
		for _, pid := range descendants(h.nspawn.Cmd.Process.Pid) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "systemd" {
				h.leader = pid
				break
			}
		}
		if h.leader == 0 {
			return errors.New("no systemd in the container yet")
		}
	}
	out, _ := h.Output("systemctl", "is-system-running")
	switch s := strings.TrimSpace(out); s {
	case "running", "degraded":
		return nil
	default:
		return fmt.Errorf("system %q", s)
	}
}

// Output runs a command inside the container (its mount, PID, network, IPC
// and UTS namespaces) and returns its combined output.
func (h *NMHost) Output(args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(h.leader), "-m", "-p", "-n", "-i", "-u", "--"}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Run is Output that fails the test on an error.
func (h *NMHost) Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := h.Output(args...)
	if err != nil {
		t.Fatalf("in the container: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// Wire runs a command in the wire namespace (the far ends of the NICs).
func (h *NMHost) Wire(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(h.wire.Cmd.Process.Pid), "-n", "--"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("on the wire: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Peer is the name, in the wire namespace, of the far end of NIC nic.
func (h *NMHost) Peer(nic string) string { return h.peers[nic] }

// ServeDHCP runs dnsmasq on the far end of NIC nic (which must have an
// address in the wire namespace) with the given dnsmasq options, for the
// rest of the test: DHCPv4 ranges, router advertisements, options.
func (h *NMHost) ServeDHCP(t testing.TB, nic string, opts ...string) {
	t.Helper()
	peer := h.peers[nic]
	args := append([]string{"-t", strconv.Itoa(h.wire.Cmd.Process.Pid), "-n", "--", "dnsmasq", "--keep-in-foreground",
		"--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--port=0", "--bind-interfaces", "--interface=" + peer,
		"--dhcp-leasefile=" + filepath.Join(t.TempDir(), "leases"), "--pid-file=", "--log-dhcp", "--log-facility=-", "--user=root"}, opts...)
	p, err := StartProcess("dnsmasq on "+peer, exec.Command("nsenter", args...))
	if err != nil {
		t.Fatal(err)
	}
	h.extra = append(h.extra, p)
	time.Sleep(200 * time.Millisecond)
	if p.Exited() {
		t.Fatalf("dnsmasq exited: %s", p.Output())
	}
}

// StartNetworkManager starts NetworkManager.service (and with it whatever
// the test's units ordered before it) and waits until NetworkManager says
// its start-up is complete: every profile that can autoconnect has been
// tried (nm-online -s).
func (h *NMHost) StartNetworkManager(t testing.TB) {
	t.Helper()
	if out, err := h.Output("systemctl", "start", "NetworkManager.service"); err != nil {
		t.Fatalf("systemctl start NetworkManager.service: %v\n%s\n%s", err, out, h.Journal("NetworkManager.service"))
	}
	if out, err := h.Output("nm-online", "-s", "-q", "-t", "90"); err != nil {
		t.Fatalf("nm-online: %v\n%s\n%s", err, out, h.Journal("NetworkManager.service"))
	}
}

// Journal is the journal of one unit (all units for ""), for failure messages.
func (h *NMHost) Journal(unit string) string {
	args := []string{"journalctl", "--no-pager", "-o", "short-monotonic"}
	if unit != "" {
		args = append(args, "-u", unit)
	}
	out, _ := h.Output(args...)
	return out
}

// Logs are the outputs of the container's own console and of the servers on
// the wire, for failure messages.
func (h *NMHost) Logs() string {
	var s strings.Builder
	for _, p := range append([]*Process{h.nspawn}, h.extra...) {
		if p != nil {
			fmt.Fprintf(&s, "--- %s:\n%s\n", p.Name, tail(p.Output(), 4000))
		}
	}
	return s.String()
}

// stop powers the container off (systemd-nspawn turns SIGTERM into an
// orderly shutdown), then ends the wire and its servers; a container that
// does not stop in 30 s is killed.
func (h *NMHost) stop() {
	for _, p := range h.extra {
		p.Stop(5 * time.Second)
	}
	if h.nspawn != nil && !h.nspawn.Exited() {
		for _, pid := range descendants(h.nspawn.Cmd.Process.Pid) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "systemd-nspawn" {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		select {
		case <-h.nspawn.done:
		case <-time.After(30 * time.Second):
			killTree(h.nspawn.Cmd.Process.Pid)
			h.nspawn.Kill()
		}
	}
	if h.wire != nil {
		h.wire.Kill()
	}
}
