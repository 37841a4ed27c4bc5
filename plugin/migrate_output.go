package plugin

import (
	"fmt"
	"io"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore/migrate"
)

const migrateLong = `Run on node 0 before it reboots into cluster 0. In order, each step
printed as it runs:

  1 preflight   node 0's assisted-service has stopped writing (no other session on
                its database; --live dumps from a snapshot and records the WAL
                position as a watermark instead), cluster 0 is reachable and has
                no AgentServiceConfig or running assisted-service (--force scales
                that Deployment to zero)
  2 bundle      bundle create + push to --to, encrypted, signed with a key pair
                generated for the run; without --recipient an age key pair is
                generated for the run too, both kept in --state-dir on node 0.
                The flags that say what goes into the bundle are bundle create's,
                with the same defaults (an encrypted push spools to --spool-dir
                so that a rerun resumes it; --no-spool streams)
  3 restore     on a real install: a restore Job on cluster 0, fitted to its
                infrastructure operator (found by the preflight): PostgreSQL from
                the operator's DATABASE_IMAGE, the PVCs exactly as the
                AgentServiceConfig specifies them, placed where the operator
                places assisted-service; it runs this very binary, pushed as an
                image beside the bundle (--restore-image overrides); the identity
                goes into a Secret there, the only place it ever leaves node 0.
                Or directly into --target-db and --target-data-dir when node 0
                can reach them (the same restore as the 'restore' command, run in
                this process)
  4 wait        until cluster 0 holds the receipt of exactly this bundle
  5 service     only now: the AgentServiceConfig (--agent-service-config), so the
                operator starts assisted-service on the restored data
  6 switchover  the assisted-installer-controller follows the service to
                --service-url (token minted with cluster 0's new key)

Rerunning the same command continues where the last run stopped (the state is in
--state-dir). A failing step exits with 10 + its number: 11 preflight, 12 bundle,
13 restore, 14 wait, 15 service, 16 switchover; 2 is a usage error.

--at-reboot arms node 0 instead of migrating now: it checks what it can (node 0,
systemd, the registry and its credentials, node 0's database, keys, disk), writes
the settings (0600) and two systemd units ordered between the agent-based
installer's: at node 0's reboot the first copies --data-dir before
assisted-service.service stops, the second runs this migration after it stopped
and before assisted-service-db.service stops, and the reboot waits until cluster 0
holds the receipt (--at-reboot-timeout, retrying; then it goes on once the bundle
is in the registry, leaving a record of what to run). --at-reboot=manual only holds
the reboot until the receipt of the bundle you migrate by hand. --disarm removes
what --at-reboot wrote. Details: docs/migrate.md.`

const migrateExample = `
  # On node 0 of a real install: restore with a Job on cluster 0, then hand over
  %[1]s assisted migrate --to registry.example.com:5000/assisted/node0:v1 \
      --db-env-file /etc/assisted/assisted-service.env --data-dir /var/lib/assisted/data \
      --target-kubeconfig /etc/kubernetes/cluster0.kubeconfig -n multicluster-engine \
      --agent-service-config asc.yaml --service-url https://assisted-service-multicluster-engine.apps.c0.example.com

  # Cluster 0's database and storage reachable from node 0: restore directly
  %[1]s assisted migrate --to registry.example.com:5000/assisted/node0:v1 \
      --db-env-file /etc/assisted/assisted-service.env --data-dir /var/lib/assisted/data \
      --target-kubeconfig cluster0.kubeconfig \
      --target-db postgres://admin@10.0.0.5:5432/installer --target-data-dir /mnt/assisted-data \
      --agent-service-config asc.yaml

  # Continue after a failure or a reboot of the shell: the same command again
  %[1]s assisted migrate --to registry.example.com:5000/assisted/node0:v1 ...

  # On node 0, any time before the installer reboots it: migrate at that reboot
  %[1]s assisted migrate --at-reboot --to registry.example.com:5000/assisted/node0:v1 \
      --db-env-file /usr/local/share/assisted-service/assisted-service.env \
      --data-dir "$(podman mount service)/data" --manifests-dir /etc/assisted/manifests \
      --target-kubeconfig /root/cluster0.kubeconfig --target-db postgres://admin@10.0.0.5:5432/installer \
      --target-data-dir /mnt/assisted-data --spool-dir /var/lib/kubectl-assisted/spool

  # Undo it
  %[1]s assisted migrate --disarm`

// sourceClusterResources exports the assisted CRs from node 0's API; node
// 0's local-auth key goes only into an encrypted layer.
func sourceClusterResources(kubeconfig string, namespaces []string, encrypted bool, localAuthNS string) (*resources.ClusterSource, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, clierr.New(fmt.Errorf("--source-kubeconfig: %w", err), "", clierr.ExitUsage)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &resources.ClusterSource{Client: dyn, Namespaces: namespaces, LocalAuth: encrypted, LocalAuthNamespace: localAuthNS}, nil
}

// migrateRenderer writes the engine's events on stderr, one line each.
type migrateRenderer struct {
	mu sync.Mutex
	w  io.Writer
	ev *eventPrinter // the restore's own events, as `restore` prints them
}

func (r *migrateRenderer) event(e migrate.Event) {
	if e.Type == migrate.EventRestore {
		r.ev.print(*e.Restore)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Type {
	case migrate.EventStepStart:
		fmt.Fprintf(r.w, "[%d/%d] %s ...\n", e.Number, e.Total, e.Step)
	case migrate.EventStepSkipped:
		fmt.Fprintf(r.w, "[%d/%d] %s: already done (%s)\n", e.Number, e.Total, e.Step, e.Detail)
	case migrate.EventStepDone:
		fmt.Fprintf(r.w, "[%d/%d] %s: %s (%.1fs)\n", e.Number, e.Total, e.Step, e.Detail, e.Duration.Seconds())
	case migrate.EventNote:
		fmt.Fprintf(r.w, "  %s\n", e.Detail)
	}
}

// MigrateResult is the -o json|yaml result of `migrate`.
type MigrateResult struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*migrate.Result
}

func (o *MigrateOptions) printResult(res *migrate.Result) error {
	if o.Output.Machine() {
		return o.Output.Print(o.out, &MigrateResult{APIVersion: ResultAPIVersion, Kind: "MigrateResult", Result: res})
	}
	fmt.Fprintf(o.out, "Migrated to cluster 0 (namespace %s).\nBundle: %s@%s\n", res.Namespace, res.Reference, res.Digest)
	if res.ServiceURL != "" {
		fmt.Fprintf(o.out, "assisted-service on cluster 0: %s\n", res.ServiceURL)
	}
	fmt.Fprintf(o.out, "Node 0 may reboot: cluster 0 holds the receipt of this bundle.\n")
	return nil
}

// MigratePlan is the -o json|yaml result of `migrate --dry-run`.
type MigratePlan struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*migrate.Plan
}

func (o *MigrateOptions) printPlan(plan *migrate.Plan) error {
	if o.Output.Machine() {
		return o.Output.Print(o.out, &MigratePlan{APIVersion: ResultAPIVersion, Kind: "MigratePlan", Plan: plan})
	}
	fmt.Fprintln(o.out, "Dry run: nothing was changed. A real run would:")
	for i, s := range plan.Steps {
		fmt.Fprintf(o.out, "  %d. %s\n", i+1, s)
	}
	return nil
}
