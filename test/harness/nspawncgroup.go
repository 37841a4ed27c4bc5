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
	"time"
)

// nspawnCgroup is a cgroup of one systemd-nspawn container's own, made
// under the same name in each hierarchy systemd tracks processes in: on this
// machine kind (shared/docs/TESTING.md) the v1 name=systemd hierarchy and a
// cgroup2 at /sys/fs/cgroup/unified (systemd's "hybrid" setup, which is what
// systemd-nspawn and the container's systemd then use), on a v2 host the
// unified hierarchy alone.
//
// With --register=no --keep-unit, systemd-nspawn gives the container the
// cgroup it was started in (systemd-nspawn(1), --keep-unit): it makes
// payload/ (the container) and supervisor/ (itself) there, and the
// container's systemd builds init.scope, system.slice/UNIT.service and so on
// under payload/. The harness runs in the hierarchies' roots, so without a
// cgroup of their own every container would share those: two containers
// running the same unit at once (parallel tests) create, fill and remove the
// same system.slice/NetworkManager.service, and one's systemd could remove it
// between the other's mkdir and its move of the unit's process, which fails
// that unit with status 219/CGROUP (seen in CI).
type nspawnCgroup struct{ dirs []string }

// nspawnCgroupParent is where the containers' cgroups are made.
const nspawnCgroupParent = "kat-nspawn"

// systemdHierarchies are the mount points of the hierarchies systemd may
// track processes in.
func systemdHierarchies() ([]string, error) {
	var hs []string
	for _, h := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(h, &st); err != nil {
			continue
		}
		const cgroupMagic, cgroup2Magic = 0x27e0eb, 0x63677270
		if st.Type == cgroupMagic || st.Type == cgroup2Magic {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil, errors.New("no cgroup hierarchy for systemd: none of /sys/fs/cgroup/systemd, /sys/fs/cgroup/unified, /sys/fs/cgroup is a cgroup file system")
	}
	return hs, nil
}

// newNspawnCgroup makes a new, empty cgroup for the container named
// machine, after removing those that killed test processes left (empty
// and older than a minute: a cgroup just made is not yet entered).
func newNspawnCgroup(machine string) (*nspawnCgroup, error) {
	hs, err := systemdHierarchies()
	if err != nil {
		return nil, err
	}
	name := ""
	c := &nspawnCgroup{}
	for _, h := range hs {
		parent := filepath.Join(h, nspawnCgroupParent)
		if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cgroup %s: %w", parent, err)
		}
		if entries, err := os.ReadDir(parent); err == nil {
			for _, e := range entries {
				if info, err := e.Info(); err == nil && e.IsDir() && time.Since(info.ModTime()) > time.Minute {
					(&nspawnCgroup{dirs: []string{filepath.Join(parent, e.Name())}}).removeIfEmpty()
				}
			}
		}
		if name == "" { // the first hierarchy picks a free name, the others follow
			dir, err := os.MkdirTemp(parent, machine+"-")
			if err != nil {
				return nil, fmt.Errorf("cgroup for %s: %w", machine, err)
			}
			name = filepath.Base(dir)
			c.dirs = append(c.dirs, dir)
			continue
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			c.remove()
			return nil, fmt.Errorf("cgroup for %s: %w", machine, err)
		}
		c.dirs = append(c.dirs, dir)
	}
	return c, nil
}

// wrap makes cmd enter the cgroup before it runs: a shell moves itself
// into it in every hierarchy and execs the command, so the command starts
// there (same PID) and everything it starts is born there.
func (c *nspawnCgroup) wrap(cmd *exec.Cmd) {
	script := ""
	for i := range c.dirs {
		script += fmt.Sprintf(`echo $$ >"$%d" && `, i+1)
	}
	args := []string{"sh", "-c", script + `shift ` + strconv.Itoa(len(c.dirs)) + ` && exec "$@"`, "sh"}
	for _, d := range c.dirs {
		args = append(args, filepath.Join(d, "cgroup.procs"))
	}
	args = append(append(args, cmd.Path), cmd.Args[1:]...)
	cmd.Path, cmd.Args, cmd.Err = "/bin/sh", args, nil
}

// tree is the cgroup and every cgroup under it in every hierarchy,
// parents before children.
func (c *nspawnCgroup) tree() []string {
	var dirs []string
	for _, d := range c.dirs {
		dirs = append(dirs, cgroupTree(d)...)
	}
	return dirs
}

// pids are the processes in the cgroup's tree.
func (c *nspawnCgroup) pids() []int {
	var pids []int
	for _, d := range c.tree() {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// remove kills what is left in the cgroup's tree (a container killed
// mid-boot may leave processes behind) and removes it, children first.
func (c *nspawnCgroup) remove() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := c.pids()
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.removeIfEmpty()
}

// removeIfEmpty removes the tree if no process is in it.
func (c *nspawnCgroup) removeIfEmpty() {
	if len(c.pids()) > 0 {
		return
	}
	rmdirTree(c.tree())
}
