// Package atreboot arms node 0 so that the migration runs by itself when node 0
// reboots into cluster 0, and holds that reboot until cluster 0 has node 0's
// assisted-service state (`kubectl assisted migrate --at-reboot`).
//
// On node 0 the agent-based installer runs assisted-service as systemd units
// (openshift/installer, data/data/agent/systemd/units/):
//
//   - assisted-service-pod.service: the podman pod; Before= the two below,
//     ConditionPathExists= the node-0 marker (/etc/assisted/node0; the first
//     versions used /etc/assisted-service/node0), TimeoutStopSec=70;
//   - assisted-service-db.service: the assisted-db container (PostgreSQL),
//     After= and BindsTo= the pod, TimeoutStopSec=300;
//   - assisted-service.service: the service container, `podman run --rm` with
//     /data in its writable layer, Requires= the database, After= and
//     BindsTo= the pod, TimeoutStopSec=300 (no ordering against the database:
//     at shutdown the two stop side by side);
//   - node-zero.service: set-node-zero.sh, which writes the node-0 marker on
//     the host whose address is NODE_ZERO_IP.
//
// assisted-installer reboots node 0 with `shutdown -r +1` ("now" on a single
// control-plane node), run on the host with nsenter
// (openshift/assisted-installer src/installer/installer.go finalize,
// src/ops/ops.go Reboot and ExecPrivilegeCommand; release-4.17, release-4.19,
// release-4.20 and master alike). At that shutdown systemd stops units in the
// reverse of their start order, so the units armed here sit between the
// installer's:
//
//	stop order at the reboot (each line waits for the one above)
//	  kubectl-assisted-at-reboot-capture.service   ExecStop: copy /data out of the still-running service
//	  assisted-service.service                     the service container stops (no more writes), then is removed
//	  kubectl-assisted-at-reboot.service           ExecStop: the migration, retried; the reboot waits for it
//	  assisted-service-db.service                  the database stops only now
//	  assisted-service-pod.service
//	  shutdown.target -> reboot.target             (JobTimeoutSec=30min, JobTimeoutAction=reboot-force)
//
// The armed units keep systemd's default dependencies: Conflicts= and Before=
// shutdown.target are what make the shutdown stop them and wait for their
// ExecStop. (A unit with DefaultDependencies=no gets neither, and a reboot does
// not wait for it.) reboot.target forces the reboot after its job timeout, so
// the hold is bounded below it: Arm refuses a bound that does not fit beside
// the installer's units' own stop timeouts.
//
// Nothing here prints: Arm, Disarm and Hold report through return values and
// callbacks; the plugin renders them.
package atreboot
