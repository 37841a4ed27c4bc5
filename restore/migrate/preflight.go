package migrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
)

// ProvenanceAnnotation marks objects migrate created, with the bundle digest.
const ProvenanceAnnotation = "kubectl-assisted.io/bundle-digest"

// preflightStep checks node 0's database and cluster 0 before anything
// changes; only then, with Force, scales a running assisted-service to zero.
type preflightStep struct{}

func (preflightStep) name() string { return StepPreflight }

func (preflightStep) run(ctx context.Context, m *migration) (string, error) {
	o, st := m.o, m.state
	var notes []string
	if o.SourceDB != "" && !st.Done(StepBundle) {
		n, who, err := o.DB.OtherSessions(ctx, o.SourceDB)
		if err != nil {
			return "", fmt.Errorf("node 0's database: %w", err)
		}
		switch {
		case n > 0 && !o.Live:
			return "", hinted(fmt.Errorf("%d other session(s) are connected to node 0's database (%s): assisted-service is still writing", n, who),
				"Stop assisted-service on node 0 first (its pod or systemd unit), or pass --live to dump from one snapshot and record a write watermark.")
		case n > 0:
			notes = append(notes, fmt.Sprintf("--live: %d session(s) still connected, dumping from a snapshot", n))
		default:
			notes = append(notes, "node 0's database is idle")
		}
	}
	c := o.Cluster
	if err := c.Reachable(ctx); err != nil {
		return "", fmt.Errorf("cluster 0's API at %s: %w", o.Target, err)
	}
	ann, found, err := c.AgentServiceConfig(ctx)
	switch {
	case err != nil:
		return "", fmt.Errorf("look for an AgentServiceConfig on cluster 0: %w", err)
	case !found:
	case st.Digest != "" && ann[ProvenanceAnnotation] == st.Digest:
		notes = append(notes, "the AgentServiceConfig is the one this migration created")
	default:
		return "", hinted(errors.New("cluster 0 already has an AgentServiceConfig: the operator would start assisted-service on an empty database before the restore"),
			"Delete it (kubectl delete agentserviceconfig agent) and let migrate create it after the restore (--agent-service-config), or restore into another cluster.")
	}
	replicas, found, err := c.ServiceReplicas(ctx, o.Namespace)
	switch {
	case err != nil:
		return "", fmt.Errorf("look for a running assisted-service on cluster 0: %w", err)
	case !found:
	case replicas != nil && *replicas == 0:
		notes = append(notes, "assisted-service on cluster 0 is scaled to zero")
	case st.Done(StepService):
		// The service step started it on the restored data.
	case !o.Force:
		return "", hinted(fmt.Errorf("assisted-service is running on cluster 0 (Deployment %s/%s): restoring under it would lose data", o.Namespace, ServiceDeployment),
			"Scale it to zero (kubectl scale deployment/assisted-service --replicas=0) or pass --force to have migrate do it.")
	default:
		if err := c.ScaleServiceToZero(ctx, o.Namespace); err != nil {
			return "", fmt.Errorf("--force: scale assisted-service to zero: %w", err)
		}
		notes = append(notes, "--force: scaled assisted-service on cluster 0 to zero")
	}
	if !o.Direct() {
		note, err := m.findOperator(ctx)
		if err != nil {
			return "", err
		}
		notes = append(notes, note)
	}
	notes = append(notes, fmt.Sprintf("cluster 0 reachable (%s), namespace %s", o.Target, o.Namespace))
	return strings.Join(notes, "; "), nil
}

// findOperator finds what the restore Job takes from cluster 0's
// infrastructure operator (restore/job): its DATABASE_IMAGE, placement,
// and whether the cluster is OpenShift. --database-image may stand in for
// an operator not installed yet, and must otherwise be of the operator's
// major: the operator's postgres container refuses a data directory of
// another ("Incompatible data directory", sclorg's try_pgupgrade).
func (m *migration) findOperator(ctx context.Context) (string, error) {
	o := m.o
	op, err := o.Cluster.Operator(ctx, o.Namespace)
	var oe *OperatorError
	switch {
	case errors.As(err, &oe) && oe.NotFound && o.DatabaseImage != "":
		m.operator, m.databaseMajor = op, job.DatabaseMajorOf(o.DatabaseImage)
		return fmt.Sprintf("no infrastructure operator on cluster 0 yet: the Job runs PostgreSQL from --database-image %s, without the operator's node placement", o.DatabaseImage), nil
	case errors.As(err, &oe):
		return "", hinted(err, "Install multicluster-engine (its infrastructure operator) on cluster 0 first, or give -n with the operator's namespace; --database-image names the PostgreSQL image when the operator is not installed yet.")
	case err != nil:
		return "", err
	}
	m.operator, m.databaseMajor = op, job.DatabaseMajorOf(op.DatabaseImage)
	note := fmt.Sprintf("infrastructure operator %s/%s runs PostgreSQL from %s", op.Namespace, op.Deployment, op.DatabaseImage)
	if o.DatabaseImage != "" {
		over := job.DatabaseMajorOf(o.DatabaseImage)
		if m.databaseMajor != 0 && over != 0 && over != m.databaseMajor {
			return "", hinted(fmt.Errorf("--database-image %s is PostgreSQL %d, but the operator runs PostgreSQL %d (%s): its postgres container would refuse the data directory the Job leaves",
				o.DatabaseImage, over, m.databaseMajor, op.DatabaseImage), "Leave --database-image out (the Job runs the operator's image), or give an image of PostgreSQL "+strconv.Itoa(m.databaseMajor)+".")
		}
		if m.databaseMajor == 0 {
			m.databaseMajor = over
		}
		note += "; the Job runs " + o.DatabaseImage + " (--database-image)"
	}
	if m.databaseMajor == 0 {
		note += " (its major is not in its name: the restore cannot check it)"
	} else if o.SourceDB != "" {
		// A logical dump restores into an older major when that server
		// accepts its schema; the restore tries it before writing.
		if v, n, err := o.DB.ServerVersion(ctx, o.SourceDB); err == nil && n/10000 > m.databaseMajor {
			note += fmt.Sprintf("; node 0 runs PostgreSQL %s, newer than the operator's %d: the restore tries the bundle's schema on %d before it writes anything, and stops there if %d refuses it",
				v, m.databaseMajor, m.databaseMajor, m.databaseMajor)
		}
	}
	if len(op.NodeSelector) > 0 || len(op.Tolerations) > 0 {
		note += fmt.Sprintf("; the Job is placed as the operator places assisted-service (node selector %v, %d toleration(s))", op.NodeSelector, len(op.Tolerations))
	}
	return note, nil
}
