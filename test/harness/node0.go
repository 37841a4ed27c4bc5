package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Node 0 of a compact agent-based install, as far as its reboot goes: the
// installer's units with their real names and the ordering they have
// upstream (openshift/installer data/data/agent/systemd/units/, read at
// commits 155f9d2a (assisted-service-pod.service), d0630a04
// (assisted-service-db.service), 006d4573 (assisted-service.service.template)
// and 3d49ffbf (node-zero.service)), running stand-ins for what podman runs
// there:
//
//   - node-zero.service writes /etc/assisted/node0, as set-node-zero.sh does on
//     node 0 only (nothing on the other hosts);
//   - assisted-service-pod.service: ConditionPathExists=/etc/assisted/node0,
//     Requires= and Before= the two below, TimeoutStopSec=70;
//   - assisted-service-db.service: node 0's PostgreSQL (Debian's 15 instead of
//     the payload's RHEL 9 13), BindsTo= and After= the pod, Type=notify,
//     TimeoutStopSec=300; the database "installer" and the role "admin" as
//     start_db.sh makes them;
//   - assisted-service.service: a client that keeps a session open on that
//     database as assisted-service does (application_name assisted-service),
//     Requires= the database, BindsTo= and After= the pod, and no ordering
//     against the database, TimeoutStopSec=300; its stop closes the session
//     (as the service's graceful stop closes its connections); its /data is
//     Node0DataDir, removed when the unit stops, as podman removes a
//     `podman run --rm` container's writable layer (ExecStopPost=podman rm).
//
// The unit files here are written from those facts, not copied.

// Paths inside node 0.
const (
	Node0EnvFile      = "/usr/local/share/assisted-service/assisted-service.env"
	Node0DataDir      = "/var/lib/assisted-service/data"
	Node0ManifestsDir = "/etc/assisted/manifests"
	Node0Binary       = "/usr/local/bin/kubectl-assisted"
	// Node0Reboot is how assisted-installer reboots node 0 when the other
	// control-plane nodes are up (openshift/assisted-installer
	// src/installer/installer.go finalize: whenToReboot "+1", "now" on a
	// single control-plane node; src/ops/ops.go Reboot and
	// ExecPrivilegeCommand: nsenter into PID 1's namespaces; release-4.17,
	// release-4.19, release-4.20, master).
	node0RebootMessage = "'Installation completed, server is going to reboot.'"
)

// Node0RebootCommand is the installer's reboot of node 0, when ("+1" or
// "now"), run inside the container as assisted-installer runs it on the host.
func Node0RebootCommand(when string) []string {
	return []string{"nsenter", "--target", "1", "--cgroup", "--mount", "--ipc", "--pid", "--", "shutdown", "-r", when, node0RebootMessage}
}

// Node0Options shape StartNode0.
type Node0Options struct {
	// NotNode0 makes it another host of the cluster: node-zero.service
	// writes no marker, and the pod's condition keeps the service off.
	NotNode0 bool
	// Files, Bind and BindRO as in SystemdOptions.
	Files        map[string]File
	Bind, BindRO []string
}

// Node0 is a running node 0.
type Node0 struct {
	*Systemd
	// DBPort is node 0's PostgreSQL on the shared loopback.
	DBPort int
	// DBPassword is DB_PASS in Node0EnvFile: the server trusts local
	// connections and ignores it; it is there to be kept secret.
	DBPassword string
}

func node0Units(port int) map[string]File {
	unit := func(s string) File { return File{Data: []byte(strings.TrimLeft(s, "\n"))} }
	return map[string]File{
		"/etc/systemd/system/node-zero.service": unit(`
# Stand-in for the agent-based installer's node-zero.service (set-node-zero.sh).
[Unit]
Description=Identify node zero to run assisted-service on (stand-in)
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/bin/set-node-zero.sh

[Install]
WantedBy=multi-user.target
`),
		"/etc/systemd/system/assisted-service-pod.service": unit(`
# Stand-in for the agent-based installer's assisted-service-pod.service (a podman pod).
[Unit]
Description=Assisted Service pod (stand-in)
Wants=network.target node-zero.service
After=network-online.target node-zero.service
ConditionPathExists=/etc/assisted/node0
Requires=assisted-service-db.service assisted-service.service
Before=assisted-service-db.service assisted-service.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/echo assisted-service pod created
ExecStop=/bin/echo assisted-service pod stopped
TimeoutStopSec=70

[Install]
WantedBy=multi-user.target
`),
		"/etc/systemd/system/assisted-service-db.service": unit(fmt.Sprintf(`
# Stand-in for the agent-based installer's assisted-service-db.service (the assisted-db container).
[Unit]
Description=Assisted Service database (stand-in)
Wants=network.target
BindsTo=assisted-service-pod.service
After=network-online.target assisted-service-pod.service

[Service]
Type=notify
User=postgres
StateDirectory=node0-db
StateDirectoryMode=0700
ExecStartPre=/bin/sh -c 'test -s /var/lib/node0-db/PG_VERSION || exec /usr/lib/postgresql/15/bin/initdb -D /var/lib/node0-db -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync'
ExecStart=/usr/lib/postgresql/15/bin/postgres -D /var/lib/node0-db -p %d -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c jit=off -c max_connections=50
Restart=on-failure
TimeoutStopSec=300

[Install]
WantedBy=multi-user.target
`, port)),
		"/etc/systemd/system/assisted-service.service": unit(`
# Stand-in for the agent-based installer's assisted-service.service (the service container,
# podman run --rm: its /data goes with it).
[Unit]
Description=Assisted Service container (stand-in)
Wants=network.target
Requires=assisted-service-db.service
BindsTo=assisted-service-pod.service
After=network-online.target assisted-service-pod.service

[Service]
ExecStart=/usr/local/bin/assisted-service-standin.sh
ExecStop=/usr/local/bin/assisted-service-standin.sh stop
ExecStopPost=/bin/rm -rf ` + Node0DataDir + `
# psql exits 2 when its session is closed under it: that is this stand-in's stop.
SuccessExitStatus=2
Restart=on-failure
TimeoutStopSec=300

[Install]
WantedBy=multi-user.target
`),
		"/usr/local/bin/assisted-service-standin.sh": {Mode: 0o755, Data: []byte(fmt.Sprintf(`#!/bin/sh
# Keeps a session on node 0's database open, as assisted-service does, after
# waiting for the database as assisted-service's setupDB retries. "stop" is
# its graceful stop: the session closes before the unit has stopped.
set -eu
. %[1]s
export PGPASSWORD="$DB_PASS"
if [ "${1:-}" = stop ]; then
	psql -qAtX -h "$DB_HOST" -p "$DB_PORT" -U "$DB_USER" -d "$DB_NAME" \
		-c "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = 'assisted-service'" >/dev/null
	echo "assisted-service: disconnected"
	exit 0
fi
until psql -qAtX -h "$DB_HOST" -p "$DB_PORT" -U "$DB_USER" -d "$DB_NAME" -c 'SELECT 1' >/dev/null 2>&1; do sleep 0.3; done
echo "assisted-service: connected to $DB_NAME"
exec psql -qAtX -h "$DB_HOST" -p "$DB_PORT" -U "$DB_USER" -d "$DB_NAME" -c "SET application_name = 'assisted-service'" -c 'SELECT pg_sleep(86400)'
`, Node0EnvFile))},
	}
}

// StartNode0 boots node 0 (StartSystemd) with the installer's units enabled
// and the plugin binary at Node0Binary, and waits for its database: the
// role admin and the empty database installer exist when it returns.
func StartNode0(t testing.TB, o Node0Options) *Node0 {
	t.Helper()
	n := &Node0{DBPort: FreePort(t), DBPassword: "node0-db-" + randHex(6)}
	files := node0Units(n.DBPort)
	marker := `mkdir -p /etc/assisted && printf 'BOOTSTRAP_HOST_MAC=52:54:00:00:00:01\n' > /etc/assisted/node0`
	if o.NotNode0 {
		marker = "# another host: set-node-zero.sh writes nothing here"
	}
	files["/usr/local/bin/set-node-zero.sh"] = File{Mode: 0o755, Data: []byte("#!/bin/sh\n" + marker + "\n")}
	files[Node0EnvFile] = File{Mode: 0o600, Data: []byte(fmt.Sprintf(
		"DB_HOST=127.0.0.1\nDB_PORT=%d\nDB_USER=admin\nDB_PASS=%s\nDB_NAME=installer\n", n.DBPort, n.DBPassword))}
	for p, f := range o.Files {
		files[p] = f
	}
	n.Systemd = StartSystemd(t, SystemdOptions{
		Files:  files,
		Enable: []string{"node-zero.service", "assisted-service-pod.service", "assisted-service-db.service", "assisted-service.service"},
		Bind:   o.Bind,
		BindRO: append([]string{PluginBinary(t) + ":" + Node0Binary}, o.BindRO...),
	})
	if o.NotNode0 {
		return n
	}
	n.WaitActive(t, "assisted-service-db.service", 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, n.URL("postgres", "postgres"))
	if err != nil {
		t.Fatalf("node 0's PostgreSQL: %v", err)
	}
	defer c.Close(context.Background())
	for _, q := range []string{"CREATE ROLE admin SUPERUSER LOGIN", "CREATE DATABASE installer OWNER admin TEMPLATE template0 ENCODING 'UTF8'"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("node 0's database: %s: %v", q, err)
		}
	}
	return n
}

// URL is node 0's database db as user, from the host (trust: no password).
func (n *Node0) URL(user, db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", user, n.DBPort, db)
}

// WaitServiceSession waits until the assisted-service stand-in holds its
// session on the database.
func (n *Node0) WaitServiceSession(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, n.URL("postgres", "postgres"))
		if err == nil {
			var k int
			err = c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'assisted-service'`).Scan(&k)
			_ = c.Close(ctx)
			if err == nil && k > 0 {
				cancel()
				return
			}
		}
		cancel()
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("assisted-service's session on node 0's database did not appear in %s:\n%s", timeout,
		n.Exec(t, "journalctl", "--no-pager", "-n", "30", "-u", "assisted-service.service").Stdout)
}
