package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func init() {
	register("jobmode", "migrate of the demo's compact cluster in job mode (restore Job on the test cluster's real kubelet) vs direct mode, same node 0 data, alternating (goal: job-mode overhead < 15 s; needs root)", benchJobMode)
}

const (
	jobRounds       = 3
	jobOverheadGoal = 15 * time.Second
	jobMajor        = 12 // the operator's DATABASE_IMAGE on release-4.17/4.19
)

// jobTimeline is where a job-mode migrate's time went, from migrate's own
// step times and the Job's pod as the kubelet reported it.
type jobTimeline struct {
	wall  time.Duration
	steps map[string]time.Duration
	// From the Job's creation, but restoreRan.
	podStart, sidecarReady, restoreRan, sidecarStopped, jobComplete time.Duration
}

// benchJobMode migrates node 0 (the compact scenario in the real schema, a
// data dir of install logs, the ABI manifests) with `kubectl assisted
// migrate`, alternately directly into a private PostgreSQL server and data
// dir, and through the restore Job on the test cluster's node (PostgreSQL
// 12 from the operator's DATABASE_IMAGE, the restore image pushed beside the
// bundle), each time into a fresh cluster-0 namespace, and prints both
// medians, the overhead and where the Job's time went.
func benchJobMode(b *bench) error {
	bin := os.Getenv("KUBECTL_ASSISTED_BIN")
	if bin == "" {
		return fmt.Errorf("KUBECTL_ASSISTED_BIN names the plugin binary (make bench sets it)")
	}
	c := harness.SharedCluster(b)
	b.Cleanup(c.Stop)
	ctx := context.Background()

	// Node 0.
	node0 := harness.NewDatabase(b)
	harness.LoadSQLFile(b, node0.URL, harness.AssistedSchemaPath())
	sc := assisted.Scenarios()[0]
	conn := node0.Connect(b)
	if err := assisted.InsertScenario(ctx, conn, sc); err != nil {
		return err
	}
	_ = conn.Close(ctx)
	work := b.TempDir()
	dataDir := filepath.Join(work, "data")
	if _, err := generateData(dataDir, 64<<20, 0.5); err != nil {
		return err
	}
	manifests := filepath.Join(work, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return err
	}
	for i, o := range sc.Objects {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(manifests, fmt.Sprintf("%02d.yaml", i)), y, 0o600); err != nil {
			return err
		}
	}
	reg := harness.StartDockerRegistry(b, harness.DockerRegistryOptions{TLS: true, Auth: true, IP: harness.NodeIP})
	c.TrustRegistry(b, reg)
	target := harness.StartPostgres(b)

	var direct, jobs []time.Duration
	for round := 0; round < jobRounds; round++ {
		for _, mode := range []string{"direct", "job"} {
			ns := c.Namespace(b)
			kubeconfig := c.KubeconfigFor(b, harness.AdminUser, ns)
			deleteASC(b, c)
			args := []string{"migrate", "--to", reg.Ref("bench/node0", fmt.Sprintf("%s-%d", mode, round)),
				"--registry-config", reg.AuthFile, "--ca-file", reg.CAFile,
				"--db", node0.URL, "--data-dir", dataDir, "--manifests-dir", manifests,
				"--target-kubeconfig", kubeconfig, "-n", ns, "--namespace-mapping", "cluster0=" + ns,
				"--state-dir", filepath.Join(work, "state-"+ns), "--no-progress", "--timeout", "10m", "-o", "json"}
			if mode == "direct" {
				db := target.NewDatabase(b)
				data := filepath.Join(work, "target-"+ns)
				if err := os.MkdirAll(data, 0o755); err != nil {
					return err
				}
				args = append(args, "--target-db", db.URL, "--target-data-dir", data)
			} else {
				c.StartOperator(b, ns, jobMajor, nil)
				class := "bench-" + ns
				c.LocalVolumes(b, class, "2Gi", "2Gi")
				asc := filepath.Join(work, "asc-"+ns+".yaml")
				if err := os.WriteFile(asc, []byte(fmt.Sprintf(benchASC, class)), 0o600); err != nil {
					return err
				}
				args = append(args, "--agent-service-config", asc)
			}
			m, err := run(bin, args...)
			if err != nil {
				return fmt.Errorf("migrate (%s): %w\n%s", mode, err, c.Describe(b, ns))
			}
			if mode == "direct" {
				direct = append(direct, m.wall)
				fmt.Printf("  round %d direct: %s\n", round+1, secs(m.wall))
				continue
			}
			jobs = append(jobs, m.wall)
			tl, err := timeline(b, c, ns, m)
			if err != nil {
				return err
			}
			fmt.Printf("  round %d job:    %s  (%s)\n", round+1, secs(m.wall), tl)
		}
	}
	d, j := median(direct), median(jobs)
	over := j - d
	fmt.Printf("migrate, direct mode:  median %s of %d (%s)\n", secs(d), len(direct), strings.Join(roundAll(direct), " "))
	fmt.Printf("migrate, job mode:     median %s of %d (%s)\n", secs(j), len(jobs), strings.Join(roundAll(jobs), " "))
	fmt.Printf("job-mode overhead:     %s (goal < %s): %s\n", secs(over), jobOverheadGoal, b.goal("job-mode overhead", over < jobOverheadGoal))
	return nil
}

const benchASC = `apiVersion: agent-install.openshift.io/v1beta1
kind: AgentServiceConfig
metadata: {name: agent}
spec:
  databaseStorage: {storageClassName: %[1]s, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  filesystemStorage: {storageClassName: %[1]s, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`

func deleteASC(b *bench, c *harness.Cluster) {
	gvr := schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentserviceconfigs"}
	_ = c.Dynamic(b).Resource(gvr).Delete(context.Background(), "agent", metav1.DeleteOptions{})
}

// timeline reads migrate's step times from its result and the Job's pod
// from the API: when it started, when PostgreSQL was ready (the restore
// container started), how long the restore ran, when the sidecar stopped.
func timeline(b *bench, c *harness.Cluster, ns string, m measured) (jobTimeline, error) {
	tl := jobTimeline{wall: m.wall, steps: map[string]time.Duration{}}
	var res struct {
		Digest string `json:"digest"`
		Steps  []struct {
			Name            string  `json:"name"`
			DurationSeconds float64 `json:"durationSeconds"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(m.stdout, &res); err != nil {
		return tl, fmt.Errorf("migrate -o json: %w", err)
	}
	for _, s := range res.Steps {
		tl.steps[s.Name] = time.Duration(s.DurationSeconds * float64(time.Second))
	}
	cs := c.Clientset(b)
	ctx := context.Background()
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(jobs.Items) != 1 {
		return tl, fmt.Errorf("the restore Job: %v", err)
	}
	created := jobs.Items[0].CreationTimestamp.Time
	for _, cond := range jobs.Items[0].Status.Conditions {
		if cond.Type == "Complete" {
			tl.jobComplete = cond.LastTransitionTime.Sub(created)
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + jobs.Items[0].Name})
	if err != nil || len(pods.Items) == 0 {
		return tl, fmt.Errorf("the Job's pod: %v", err)
	}
	p := pods.Items[0]
	if p.Status.StartTime != nil {
		tl.podStart = p.Status.StartTime.Sub(created)
	}
	for _, st := range p.Status.InitContainerStatuses {
		if t := st.State.Terminated; t != nil {
			tl.sidecarStopped = t.FinishedAt.Sub(created)
		}
	}
	for _, st := range p.Status.ContainerStatuses {
		if t := st.State.Terminated; t != nil {
			tl.sidecarReady = t.StartedAt.Sub(created)
			tl.restoreRan = t.FinishedAt.Sub(t.StartedAt.Time)
		}
	}
	return tl, nil
}

func (t jobTimeline) String() string {
	var steps []string
	for n, d := range t.steps {
		steps = append(steps, fmt.Sprintf("%s %s", n, secs(d)))
	}
	sort.Strings(steps)
	return fmt.Sprintf("steps: %s; Job: pod started +%s, PostgreSQL ready (restore started) +%s, restore ran %s, PostgreSQL stopped +%s, Job complete +%s",
		strings.Join(steps, ", "), secs(t.podStart), secs(t.sidecarReady), secs(t.restoreRan), secs(t.sidecarStopped), secs(t.jobComplete))
}
