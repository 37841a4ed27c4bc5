package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// node0State is what step 2 put on node 0.
type node0State struct {
	clusterID, infraEnvID string
	hostIDs               []string
	dataDir, manifestsDir string
	manifestObjects       int
	xattrs                int    // files carrying the manifest-source xattr
	xattrNote             string // why there are none, when the filesystem refused
}

// seedNode0 is step 2: the assisted-service database with the real schema and
// a compact cluster mid-install, its file storage, and the ABI manifests the
// rows were registered from.
func (d *demo) seedNode0(s *stepRun) error {
	n := &d.node0
	n.dataDir = d.path("node0", "data")
	n.manifestsDir = d.path("node0", "manifests")
	if d.node0c != nil {
		// Inside node 0's container: the service's /data and the manifests
		// where the installer keeps them.
		n.dataDir, n.manifestsDir = d.node0c.Path(harness.Node0DataDir), d.node0c.Path(harness.Node0ManifestsDir)
	}
	if err := mkdirs(n.dataDir, n.manifestsDir); err != nil {
		return err
	}

	// The manifests first: the rows are what assisted-service makes of them.
	texts := abiManifests()
	var all []byte
	for _, name := range abiManifestOrder {
		if err := os.WriteFile(filepath.Join(n.manifestsDir, name), []byte(texts[name]), 0o600); err != nil {
			return err
		}
		all = append(append(all, texts[name]...), "\n---\n"...)
	}
	objs, err := assisted.ParseObjects(all)
	if err != nil {
		return fmt.Errorf("ABI manifests: %w", err)
	}
	n.manifestObjects = len(objs)
	s.say("ABI manifests: %s (%d objects in %d files: ClusterDeployment, AgentClusterInstall, ClusterImageSet, pull secret, InfraEnv, 3 NMStateConfigs)", n.manifestsDir, len(objs), len(abiManifestOrder))

	scenario := assisted.Scenario{Name: clusterName, Objects: objs, OpenshiftVersion: openshiftVersion}
	for i, m := range masters {
		scenario.Hosts = append(scenario.Hosts, assisted.ScenarioHost{
			ID: assisted.ScenarioUUID(clusterName + "/host/" + fmt.Sprint(i)), Role: "master", Hostname: m.name,
			Bootstrap: i == 0, IPs: []string{m.ip + "/24"}, Approved: true,
		})
		n.hostIDs = append(n.hostIDs, scenario.Hosts[i].ID)
	}
	n.clusterID = assisted.ScenarioUUID(clusterName + "/cluster")
	n.infraEnvID = assisted.ScenarioUUID(clusterName + "/infra-env")
	rows, err := assisted.ScenarioRows(scenario)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	midInstall(rows, n, now)
	rows = append(rows, extraRows(n, now)...)
	rows = append(rows, eventRows(n, now)...)

	harness.LoadSQLFile(d.r, d.node0DB, harness.AssistedSchemaPath())
	if err := insertAll(d.ctx, d.node0DB, rows); err != nil {
		return err
	}
	counts, err := tableCounts(d.ctx, d.node0DB)
	if err != nil {
		return err
	}
	var total int64
	for _, c := range counts {
		total += c
	}
	d.sum.Database.RowsSeeded = total
	for t, c := range counts {
		d.sum.Database.Tables = append(d.sum.Database.Tables, TableCount{Name: t, Node0: c})
	}
	d.sum.Objects.Manifests = n.manifestObjects
	s.say("database:      %s: the real assisted-service schema (%d tables), %d rows", d.node0DB, len(counts), total)
	s.say("               cluster %s %q installing (62%%), 3 hosts, %d events", n.clusterID, clusterName, counts["events"])

	files, err := writeDataDir(n, now, d.secrets)
	if err != nil {
		return err
	}
	bundled, err := countFiles(n.dataDir, map[string]bool{"installercache": true})
	if err != nil {
		return err
	}
	d.sum.Files.Node0Files, d.sum.Files.Node0Bytes, d.sum.Files.Node0Xattrs = bundled.files, bundled.bytes, bundled.xattrs
	s.say("file storage:  %s: %d files, %s (ignitions, kubeconfig, kubeadmin-password, install-config, manifests, 3 host log tarballs,", n.dataDir, files.files, humanBytes(files.bytes))
	s.say("               and installercache/, which bundles leave out: %d files to move)", bundled.files)
	if n.xattrNote != "" {
		s.say("note: %s", n.xattrNote)
	} else {
		s.say("               %d manifests carry the user.assisted-installer-manifest-source xattr (user or system)", n.xattrs)
	}
	return nil
}

func insertAll(ctx context.Context, url string, rows []assisted.ScenarioRow) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := assisted.InsertRows(ctx, tx, rows); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// midInstall turns the freshly registered rows into the state node 0 has just
// before it reboots: the other masters have written their image and joined,
// node 0 waits for the control plane, and every host has uploaded its logs.
func midInstall(rows []assisted.ScenarioRow, n *node0State, now time.Time) {
	started := now.Add(-42 * time.Minute)
	for _, r := range rows {
		switch r.Table {
		case "clusters":
			v := r.Values
			v["status"], v["status_info"] = "installing", "Installation in progress"
			v["install_started_at"], v["status_updated_at"] = started, started
			v["updated_at"] = now.Add(-time.Minute)
			v["openshift_cluster_id"] = openshiftClusterID()
			v["progress_preparing_for_installation_stage_percentage"] = int64(100)
			v["progress_installing_stage_percentage"] = int64(58)
			v["progress_total_percentage"] = int64(62)
			v["validations_info"] = `{"configuration":[{"id":"pull-secret-set","status":"success","message":"The pull secret is set."}],"hosts-data":[{"id":"all-hosts-are-ready-to-install","status":"success","message":"All hosts in the cluster are ready to install."}],"network":[{"id":"api-vips-valid","status":"success","message":"api vips 192.168.111.5 belongs to the Machine CIDR and is not in use."}]}`
		case "hosts":
			v := r.Values
			// The service's percentage: (index+1)/len*100 of the stage in the
			// host's list, truncated (release-4.19 internal/host/host.go
			// UpdateInstallProgress, internal/host/common.go MasterStages and
			// BootstrapStages; the rehearsal's service wrote 85 for Joined).
			stage, pct, info := "Joined", int64(85), ""
			if v["bootstrap"] == true {
				stage, pct, info = "Waiting for control plane", int64(40), "waiting for 2 master nodes to join"
			}
			v["status"], v["status_info"] = "installing-in-progress", stage
			v["progress_current_stage"], v["progress_installation_percentage"], v["progress_progress_info"] = stage, pct, info
			v["progress_stage_started_at"], v["progress_stage_updated_at"] = now.Add(-6*time.Minute), now.Add(-time.Minute)
			v["logs_collected_at"], v["logs_started_at"], v["logs_info"] = now.Add(-2*time.Minute), now.Add(-3*time.Minute), "completed"
			v["updated_at"], v["status_updated_at"] = now.Add(-time.Minute), now.Add(-6*time.Minute)
		}
	}
}

// extraRows are the rows assisted-service itself writes at start and install:
// its migrations, the release image cache, and the monitored operators.
func extraRows(n *node0State, now time.Time) []assisted.ScenarioRow {
	var rows []assisted.ScenarioRow
	for _, id := range []string{"20210713123129", "20211125182200", "20220325131400", "20220620090000", "20221031103146",
		"20230215120000", "20230522152500", "20231107100000", "20240318143000", "20250115120000", "20250728120000",
		"20251216120000", "20251217120000", "20260413120000"} {
		rows = append(rows, assisted.ScenarioRow{Table: "migrations", Values: map[string]any{"id": id}})
	}
	rows = append(rows, assisted.ScenarioRow{Table: "release_images", Values: map[string]any{
		"cpu_architecture": "x86_64", "cpu_architectures": []string{"x86_64"}, "default": true, "openshift_version": "4.17",
		"support_level": "production", "url": releaseImage, "version": openshiftVersion,
	}})
	for _, op := range []struct{ name, ns string }{{"console", "openshift-console"}, {"cvo", "openshift-cluster-version"}} {
		rows = append(rows, assisted.ScenarioRow{Table: "monitored_operators", Values: map[string]any{
			"cluster_id": n.clusterID, "name": op.name, "namespace": op.ns, "operator_type": "builtin",
			"timeout_seconds": int64(3600), "status": "progressing", "status_info": "",
			"status_updated_at": now.Add(-3 * time.Minute), "properties": "", "subscription_name": "", "version": "",
		}})
	}
	return rows
}

// eventRows is the events timeline of the cluster, its infra-env and hosts,
// as assisted-service writes it from registration to the middle of the
// installation.
func eventRows(n *node0State, now time.Time) []assisted.ScenarioRow {
	t := now.Add(-95 * time.Minute)
	var rows []assisted.ScenarioRow
	add := func(name, severity, message, hostID string, withCluster, withInfraEnv bool) {
		t = t.Add(47 * time.Second)
		v := map[string]any{
			"name": name, "severity": severity, "message": message, "category": "user",
			"event_time": t, "created_at": t, "updated_at": t,
			"request_id": assisted.ScenarioUUID(fmt.Sprintf("request/%d", len(rows))),
		}
		if withCluster {
			v["cluster_id"] = n.clusterID
		}
		if withInfraEnv {
			v["infra_env_id"] = n.infraEnvID
		}
		if hostID != "" {
			v["host_id"] = hostID
		}
		rows = append(rows, assisted.ScenarioRow{Table: "events", Values: v})
	}
	add("cluster_registration_succeeded", "info", fmt.Sprintf("Successfully registered cluster %s with id %s", clusterName, n.clusterID), "", true, false)
	add("infra_env_registration_succeeded", "info", "Registered infra env", "", false, true)
	add("image_info_updated", "info", `Updated image information (Image type is "full-iso", SSH public key is set)`, "", false, true)
	statuses := []struct{ from, to, why string }{
		{"discovering", "insufficient", "Host does not meet the minimum hardware requirements: No eligible disks were found"},
		{"insufficient", "known", "Host is ready to be installed"},
		{"known", "preparing-for-installation", "Host is preparing for installation"},
		{"preparing-for-installation", "preparing-successful", "Host finished successfully to prepare for installation"},
		{"preparing-successful", "installing", "Installation is in progress"},
		{"installing", "installing-in-progress", "Starting installation"},
	}
	for i, m := range masters {
		add("host_registration_succeeded", "info", fmt.Sprintf("Host %s: Successfully registered", m.name), n.hostIDs[i], true, true)
		add("host_validation_fixed", "info", fmt.Sprintf("Host %s: validation 'ntp-synced' is now fixed", m.name), n.hostIDs[i], true, true)
	}
	add("cluster_status_updated", "info", "Updated status of the cluster to ready", "", true, false)
	for _, st := range statuses {
		for i, m := range masters {
			add("host_status_updated", "info", fmt.Sprintf("Host %s: updated status from %s to %s (%s)", m.name, st.from, st.to, st.why), n.hostIDs[i], true, true)
		}
		if st.to == "preparing-for-installation" {
			add("cluster_status_updated", "info", "Updated status of the cluster to preparing-for-installation", "", true, false)
		}
		if st.to == "installing" {
			add("cluster_installation_started", "info", "Cluster starting installation", "", true, false)
			add("cluster_status_updated", "info", "Updated status of the cluster to installing", "", true, false)
		}
	}
	for i, m := range masters {
		stages := []string{"Starting installation", "Installing", "Writing image to disk", "Writing image to disk: 50%", "Writing image to disk: 100%", "Rebooting", "Configuring", "Joined"}
		if i == 0 {
			stages = []string{"Starting installation", "Installing", "Writing image to disk", "Writing image to disk: 50%", "Writing image to disk: 100%", "Waiting for control plane"}
		}
		for _, st := range stages {
			add("host_install_progress_updated", "info", fmt.Sprintf("Host: %s, reached installation stage %s", m.name, st), n.hostIDs[i], true, true)
		}
		add("host_logs_uploaded", "info", fmt.Sprintf("Uploaded logs for host %s cluster %s", m.name, n.clusterID), n.hostIDs[i], true, true)
	}
	add("cluster_validation_failed", "warning", "Cluster validation 'ntp-server-configured' that used to succeed is now failing", "", true, false)
	add("cluster_validation_fixed", "info", "Cluster validation 'ntp-server-configured' is now fixed", "", true, false)
	return rows
}

// tableCounts counts the rows of every table of the public schema.
func tableCounts(ctx context.Context, url string) (map[string]int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, t := range tables {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM public."+pgx.Identifier{t}.Sanitize()).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t, err)
		}
		out[t] = n
	}
	return out, nil
}
