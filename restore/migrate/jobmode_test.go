package migrate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
)

func TestPreflight_JobModeFindsTheOperator(t *testing.T) {
	w := newWorld(t, false)
	m := w.migration(t)
	detail, err := preflightStep{}.run(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if m.operator == nil || m.operator.DatabaseImage != "quay.io/sclorg/postgresql-12-c8s:latest" || m.databaseMajor != 12 {
		t.Fatalf("operator %+v, major %d", m.operator, m.databaseMajor)
	}
	for _, want := range []string{"mce/infrastructure-operator", "postgresql-12-c8s", "1 toleration",
		"node 0 runs PostgreSQL 15.20, newer than the operator's 12"} {
		if !strings.Contains(detail, want) {
			t.Errorf("preflight %q lacks %q", detail, want)
		}
	}
}

func TestPreflight_JobModeWithoutOperator(t *testing.T) {
	w := newWorld(t, false)
	w.cluster.operator = nil
	_, err := preflightStep{}.run(context.Background(), w.migration(t))
	if err == nil || !strings.Contains(Hint(err), "multicluster-engine") {
		t.Fatalf("no operator: %v (hint %q), want a refusal that says to install it", err, Hint(err))
	}
	// --database-image stands in for an operator not installed yet.
	w.o.DatabaseImage = "registry.redhat.io/rhel9/postgresql-13:latest"
	m := w.migration(t)
	detail, err := preflightStep{}.run(context.Background(), m)
	if err != nil || m.databaseMajor != 13 || !strings.Contains(detail, "--database-image") {
		t.Fatalf("with --database-image: %v, major %d, %q", err, m.databaseMajor, detail)
	}
}

func TestPreflight_OperatorInAnotherNamespace(t *testing.T) {
	w := newWorld(t, false)
	w.o.DatabaseImage = "quay.io/sclorg/postgresql-12-c8s:latest"
	w.cluster.operatorErr = &OperatorError{Err: errors.New("the infrastructure operator runs in assisted-installer/infrastructure-operator, not in mce")}
	if _, err := (preflightStep{}).run(context.Background(), w.migration(t)); err == nil || !strings.Contains(err.Error(), "assisted-installer") {
		t.Fatalf("operator elsewhere: %v, want a refusal naming where it runs (even with --database-image)", err)
	}
}

func TestPreflight_DatabaseImageOfAnotherMajor(t *testing.T) {
	w := newWorld(t, false)
	w.o.DatabaseImage = "quay.io/sclorg/postgresql-16-c9s:latest"
	_, err := preflightStep{}.run(context.Background(), w.migration(t))
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL 16") || !strings.Contains(err.Error(), "PostgreSQL 12") {
		t.Fatalf("a 16 image for an operator that runs 12: %v", err)
	}
	// The same major from a mirror is fine.
	w.o.DatabaseImage = "mirror.example.com/rhel8/postgresql-12@sha256:" + strings.Repeat("1", 64)
	m := w.migration(t)
	if _, err := (preflightStep{}).run(context.Background(), m); err != nil || m.databaseMajor != 12 {
		t.Fatalf("a 12 image from a mirror: %v, major %d", err, m.databaseMajor)
	}
}

// jobOf runs the preflight, bundle and restore steps and returns the Job
// applied.
func jobOf(t *testing.T, w *world) (*migration, *batchv1.Job, string) {
	t.Helper()
	m := w.migration(t)
	ctx := context.Background()
	if _, err := (preflightStep{}).run(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := (bundleStep{}).run(ctx, m); err != nil {
		t.Fatal(err)
	}
	detail, err := restoreStep{}.run(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range w.cluster.applied {
		if j, ok := o.(*batchv1.Job); ok {
			return m, j, detail
		}
	}
	t.Fatal("no Job applied")
	return nil, nil, ""
}

func TestRestoreJob_RunsItselfAndTheOperatorsPostgres(t *testing.T) {
	w := newWorld(t, false)
	w.o.Version = "v9.9.9"
	m, j, detail := jobOf(t, w)
	if len(w.bundles.imagePushes) != 1 || w.bundles.imagePushes[0] != m.state.Pinned {
		t.Fatalf("restore image pushes %v, want one beside %s", w.bundles.imagePushes, m.state.Pinned)
	}
	spec := j.Spec.Template.Spec
	restoreImage := "reg.example.com:5000/assisted/node0@sha256:" + strings.Repeat("e", 64)
	if spec.Containers[0].Image != restoreImage || !strings.Contains(detail, "pushed beside the bundle") {
		t.Errorf("restore image %s (detail %q), want the pushed %s", spec.Containers[0].Image, detail, restoreImage)
	}
	op := w.cluster.operator
	if spec.InitContainers[0].Image != op.DatabaseImage {
		t.Errorf("sidecar image %s, want the operator's %s", spec.InitContainers[0].Image, op.DatabaseImage)
	}
	if !equality.Semantic.DeepEqual(spec.NodeSelector, op.NodeSelector) || !equality.Semantic.DeepEqual(spec.Tolerations, op.Tolerations) {
		t.Errorf("placement %v %v, want the operator's", spec.NodeSelector, spec.Tolerations)
	}
	if args := strings.Join(spec.Containers[0].Args, " "); !strings.Contains(args, "--database-major 12") {
		t.Errorf("args %q: no --database-major 12", args)
	}
}

func TestRestoreJob_GivenImagePushesNothing(t *testing.T) {
	w := newWorld(t, false)
	w.o.RestoreImage = "quay.io/example/kubectl-assisted:v1"
	_, j, _ := jobOf(t, w)
	if len(w.bundles.imagePushes) != 0 || j.Spec.Template.Spec.Containers[0].Image != w.o.RestoreImage {
		t.Fatalf("pushes %v, image %s", w.bundles.imagePushes, j.Spec.Template.Spec.Containers[0].Image)
	}
}

func TestRestoreJob_ReplacesAFailedJob(t *testing.T) {
	w := newWorld(t, false)
	w.cluster.jobFailed = "BackoffLimitExceeded"
	m, j, _ := jobOf(t, w)
	if want := "mce/" + job.JobName(m.state.Digest); len(w.cluster.deletedJobs) != 1 || w.cluster.deletedJobs[0] != want || j == nil {
		t.Fatalf("deleted %v, want %s before the new Job", w.cluster.deletedJobs, want)
	}
}

func TestWait_AFailedJobEndsTheWait(t *testing.T) {
	defer func(d time.Duration) { jobPollInterval = d }(jobPollInterval)
	jobPollInterval = 10 * time.Millisecond
	w := newWorld(t, false)
	w.o.Timeout = time.Minute
	w.cluster.receipt = nil // never comes
	w.cluster.jobFailed = "PodFailurePolicy: the restore exited 26: the target database runs PostgreSQL 12.22, older than the dump's source"
	m := w.migration(t)
	m.state.Digest = "sha256:" + strings.Repeat("a", 64)
	m.state.Steps[StepRestore] = &StepState{State: StateDone}
	start := time.Now()
	_, err := waitStep{}.run(context.Background(), m)
	if err == nil || !strings.Contains(err.Error(), "exited 26") || time.Since(start) > 20*time.Second {
		t.Fatalf("wait on a failed Job: %v after %s, want its reason at once", err, time.Since(start))
	}
	if !strings.Contains(Hint(err), "run the same command again") {
		t.Errorf("hint %q", Hint(err))
	}
	if _, ok := m.state.Steps[StepRestore]; ok {
		t.Error("the restore step must run again (a new Job) on the next run")
	}
}

// The receipt is written before the Job ends (its PostgreSQL still shuts
// down): the wait lasts until the Job has completed.
func TestWait_UntilTheJobHasEnded(t *testing.T) {
	defer func(d time.Duration) { jobPollInterval = d }(jobPollInterval)
	jobPollInterval = 5 * time.Millisecond
	w := newWorld(t, false)
	w.cluster.jobFound, w.cluster.jobRunningPolls = true, 5
	m := w.migration(t)
	m.state.Digest = "sha256:" + strings.Repeat("a", 64)
	if _, err := (waitStep{}).run(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if w.cluster.jobRunningPolls != 0 {
		t.Fatalf("the wait ended with the Job still running (%d polls left)", w.cluster.jobRunningPolls)
	}
	if !strings.Contains(w.notes(), "shutting down") {
		t.Errorf("notes %q: the wait for the Job's end is not said", w.notes())
	}
}
