package restore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/restore/journal"
	"github.com/kubectl-assisted/kubectl-assisted/restore/kubekeys"
	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

// loadDatabase loads the database layer into the target in one transaction.
// Before it commits, inside the transaction: the kube keys are matched and
// written (or the resources re-created from the rows, their drift checked and
// their conflicts on cluster 0 checked), then the journal is created and the
// phase recorded as running. A dry run stops there and rolls back.
func (r *runner) loadDatabase(ctx context.Context, dry bool, started time.Time) (journal.Counts, error) {
	rc, err := r.b.Database(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	replace := r.o.Replace || r.dbResume || r.o.Diff
	sum, err := pg.Restore(ctx, r.o.TargetDB, rc, pg.RestoreOptions{
		Replace: replace,
		Logger:  r.log,
		// A dry run rolls back: nothing may be committed before, so no
		// staging either.
		SingleTransaction: dry,
		// Statistics a one-transaction restore can only gather after its
		// commit are gathered beside the next phases.
		DeferAnalyze: !dry,
		BeforeCommit: func(ctx context.Context, tx pgx.Tx) error {
			return r.beforeCommit(ctx, tx, dry, started)
		},
	})
	res := &DatabaseResult{}
	switch {
	case dry && errors.Is(err, errRollback):
		res.RolledBack = true
		if m := r.b.Metadata.Database; m != nil {
			res.Tables, res.Bytes = len(m.Tables), m.Bytes
			for _, t := range m.Tables {
				res.Rows += t.Rows
			}
		}
		r.res.Database = res
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("restore the database: %w", err)
	}
	res.Tables, res.Bytes = len(sum.Tables), sum.Bytes
	if !dry && !sum.Analyzed {
		done := make(chan struct{})
		r.analyzed = done
		go func() {
			defer close(done)
			if err := pg.Analyze(ctx, r.o.TargetDB, sum.Tables, r.log); err != nil {
				r.log.Warn("ANALYZE after the restore did not run; autovacuum will gather statistics", "error", err)
			}
		}()
	}
	for _, t := range sum.Tables {
		res.Rows += t.Rows
	}
	r.res.Database = res
	res.ImageURLsReset = r.imageURLsReset
	counts := journal.Counts{"tables": int64(res.Tables), "rows": res.Rows, "bytes": res.Bytes}
	if r.res.KubeKeys != nil {
		counts["kubeKeys"] = int64(len(r.res.KubeKeys.Matches))
	}
	if res.ImageURLsReset > 0 {
		counts["imageURLsReset"] = res.ImageURLsReset
	}
	if k := r.res.Recreated; k != nil {
		counts["kubeKeys"] = int64(len(k.Clusters) + len(k.InfraEnvs) + len(k.Hosts))
	}
	return counts, nil
}

// dryRunDatabase is the database part of a dry run. A client dry run runs
// nothing from the bundle on the target and writes nothing there: the stream
// was verified (every statement checked) by verifyBundle, and pg.Preflight
// checks the target in a READ ONLY transaction. A server dry run and a drift
// check need the rows (kube keys, re-created objects), so they load them in a
// transaction that is always rolled back; only checked statements run.
func (r *runner) dryRunDatabase(ctx context.Context) error {
	if r.o.Diff || r.o.DryRun != resources.DryRunClient {
		_, err := r.loadDatabase(ctx, true, r.now())
		return err
	}
	rc, err := r.b.Database(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := pg.Preflight(ctx, r.o.TargetDB, rc, pg.PreflightOptions{Replace: r.o.Replace || r.dbResume}); err != nil {
		return fmt.Errorf("check the target database: %w; nothing was changed", err)
	}
	r.check("the database layer can be restored into the target database (checked read-only; no row loaded)")
	res := &DatabaseResult{NotLoaded: true}
	if m := r.b.Metadata.Database; m != nil {
		res.Tables, res.Bytes = len(m.Tables), m.Bytes
		for _, t := range m.Tables {
			res.Rows += t.Rows
		}
	}
	r.res.Database = res
	switch {
	case r.recreate && !r.o.SkipResources:
		r.warn("a client dry run does not load the rows, so the resources re-created from them were not built or checked: use --dry-run=server (rolled-back load) or --diff for that")
	case r.writeKeys:
		r.warn("a client dry run does not load the rows, so the kube keys were not matched against them: use --dry-run=server (rolled-back load) for that")
	}
	return nil
}

func (r *runner) beforeCommit(ctx context.Context, tx pgx.Tx, dry bool, started time.Time) error {
	// The engine restores with an empty search_path; assisted-service's
	// tables, which the kube keys and re-created resources read, are in public.
	if _, err := tx.Exec(ctx, "SELECT pg_catalog.set_config('search_path', 'public', true)"); err != nil {
		return err
	}
	switch {
	case r.recreate && !r.o.SkipResources:
		if err := r.recreateResources(ctx, tx, tx); err != nil {
			return err
		}
	case r.writeKeys:
		kk, err := kubekeys.Write(ctx, tx, r.targets)
		if err != nil {
			var me *kubekeys.MismatchError
			if errors.As(err, &me) {
				return fmt.Errorf("%w; nothing was changed", err)
			}
			return err
		}
		r.res.KubeKeys = kk
		if len(kk.UnkeyedClusters) > 0 {
			r.warn("%d live cluster row(s) match no ClusterDeployment of the bundle and stay invisible to the controllers: %v", len(kk.UnkeyedClusters), kk.UnkeyedClusters)
		}
	}
	if r.o.Config != nil && hasInfraEnvs(r.b.Metadata.Database) {
		// Only for cluster 0's service: a restore without a cluster keeps
		// node 0's rows as they were, to be read elsewhere. Decided from the
		// bundle's (signed) metadata, which lists the dump's tables: a
		// database without assisted-service's infra_envs (a minimal or
		// foreign one) has no discovery image to regenerate.
		n, err := regenerateImageURLs(ctx, tx)
		if err != nil {
			return err
		}
		r.imageURLsReset = n
	}
	if dry {
		return errRollback
	}
	if r.jdb != nil {
		// The journal lives in this database: write it through the restore
		// transaction (whose replace may have dropped it), so it commits with
		// the rows.
		r.jdb.UseTx(tx)
		defer r.jdb.UseTx(nil)
		if r.j != nil {
			if err := r.j.Rewrite(ctx); err != nil {
				return err
			}
		}
	}
	if r.j == nil {
		if err := r.ensureJournal(ctx); err != nil {
			return err
		}
		return r.j.Put(ctx, PhaseDatabase, journal.Record{State: journal.StateRunning, StartedAt: started})
	}
	return nil
}

// recreateResources builds the objects from the rows q reads, writes their
// kube keys through tx (nil: they are already there), checks the drift and,
// with a cluster, the objects against it; the plan is kept for the
// resources phase.
func (r *runner) recreateResources(ctx context.Context, q recreate.Querier, tx pgx.Tx) error {
	built, err := recreate.Build(ctx, q, recreate.Options{Namespace: r.o.Namespace, NamespaceMapping: r.o.NamespaceMapping,
		Node0: r.node0, Manifests: r.manifests})
	if err != nil {
		return fmt.Errorf("re-create the resources from the database: %w", err)
	}
	if tx != nil {
		if err := writeRecreatedKeys(ctx, tx, built.Keys); err != nil {
			return err
		}
	}
	r.res.Recreated = &built.Keys
	diffs, err := recreate.Diff(built.Objects, built.Rows)
	if err != nil {
		return fmt.Errorf("compare the re-created resources with the database: %w", err)
	}
	node0 := recreate.DiffNode0(built)
	r.res.Drift = append(diffs, node0...)
	if r.o.Diff {
		return nil
	}
	if len(diffs) > 0 {
		if !r.o.AcceptDrift {
			return &DriftError{Differences: diffs}
		}
		r.warn("%d field(s) of the re-created resources disagree with the database (--accept-drift): the controllers will update the database from them", len(diffs))
	}
	if len(node0) > 0 {
		fields := make([]string, 0, len(node0))
		for i, d := range node0 {
			if i == 10 {
				fields = append(fields, "...")
				break
			}
			fields = append(fields, d.Kind+" "+d.Name+" "+d.Field)
		}
		r.warn("%d field(s) of the re-created resources differ from node 0's CRs (restore --recreate-resources --diff lists them): %s", len(node0), strings.Join(fields, ", "))
	}
	var objs []*unstructured.Unstructured
	seenNS := map[string]bool{}
	for _, o := range built.Objects {
		if ns := o.GetNamespace(); ns != "" && !seenNS[ns] {
			seenNS[ns] = true
			objs = append(objs, namespaceObject(ns))
		}
	}
	objs = append(objs, built.Objects...)
	cz := r.o.ClusterZero
	if cz != nil {
		mapped := *cz
		if to, ok := r.o.NamespaceMapping[mapped.Namespace]; ok {
			mapped.Namespace = to
		}
		cz = &mapped
	} else if m := r.manifests; m != nil && m.ClusterDeployment != nil {
		for _, o := range built.Objects {
			if o.GetKind() == "ClusterDeployment" && o.GetName() == m.ClusterDeployment.GetName() {
				cz = &resources.ObjectKey{Group: "hive.openshift.io", Kind: "ClusterDeployment", Namespace: o.GetNamespace(), Name: o.GetName()}
			}
		}
	}
	plan, err := resources.NewPlan(objs, r.planOptions(nil, cz))
	if err != nil {
		return fmt.Errorf("plan the re-created resources: %w", err)
	}
	if r.cs != nil {
		if err := r.checkResources(ctx, plan); err != nil {
			return err
		}
	}
	r.plan = plan
	return nil
}

// recreateFromTarget rebuilds the objects from the database an earlier run
// restored and (again, idempotently) writes their kube keys: that run may have
// skipped the resources.
func (r *runner) recreateFromTarget(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, r.o.TargetDB)
	if err != nil {
		return fmt.Errorf("connect to the target database: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("target database: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := r.recreateResources(ctx, tx, tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// writeRecreatedKeys sets the kube keys of the rows the objects were built from.
func writeRecreatedKeys(ctx context.Context, tx pgx.Tx, k recreate.KubeKeys) error {
	exec := func(what, sql string, args ...any) error {
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			return fmt.Errorf("write kube key of %s: %w", what, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("write kube key of %s: %d rows changed, want 1", what, tag.RowsAffected())
		}
		return nil
	}
	for _, c := range k.Clusters {
		if err := exec("cluster "+c.ID, `UPDATE clusters SET kube_key_name = $1, kube_key_namespace = $2 WHERE id = $3`, c.Name, c.Namespace, c.ID); err != nil {
			return err
		}
	}
	for _, ie := range k.InfraEnvs {
		if err := exec("infra-env "+ie.ID, `UPDATE infra_envs SET name = $1, kube_key_namespace = $2 WHERE id = $3`, ie.Name, ie.Namespace, ie.ID); err != nil {
			return err
		}
	}
	for _, h := range k.Hosts {
		if err := exec("host "+h.ID, `UPDATE hosts SET kube_key_namespace = $1 WHERE id = $2 AND infra_env_id = $3`, h.Namespace, h.ID, h.InfraEnvID); err != nil {
			return err
		}
	}
	return nil
}

// verifyDatabase re-checks a database phase recorded as done: every table of
// the bundle exists and those that had rows still have some. It does not
// compare counts: assisted-service may have started and added rows.
func (r *runner) verifyDatabase(ctx context.Context) error {
	m := r.b.Metadata.Database
	if m == nil {
		return nil
	}
	conn, err := pgx.Connect(ctx, r.o.TargetDB)
	if err != nil {
		return fmt.Errorf("connect to the target database: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	for _, t := range m.Tables {
		var exists, hasRows bool
		err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{t.Schema, t.Name}.Sanitize()).Scan(&exists)
		if err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("table %s.%s is missing", t.Schema, t.Name)
		}
		if t.Rows == 0 {
			continue
		}
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{t.Schema, t.Name}.Sanitize()+`)`).Scan(&hasRows); err != nil {
			return err
		}
		if !hasRows {
			return fmt.Errorf("table %s.%s is empty", t.Schema, t.Name)
		}
	}
	return nil
}

// regenerateImageURLs marks every restored infra-env's discovery image as not
// generated, so that cluster 0's service builds its ISO URL on its own image
// service. assisted-service keeps infra_envs.download_url, which holds the
// IMAGE_SERVICE_BASE_URL of the service that generated it (node 0's), as long
// as the image type, version and architecture are unchanged and generated is
// true (openshift/assisted-service release-4.19
// internal/bminventory/inventory.go updateExternalImageInfo, lines
// 1160-1173); the InfraEnv controller calls it on every reconcile
// (UpdateInfraEnvInternal -> GenerateInfraEnvISOInternal, line 5305) and
// copies download_url into status.isoDownloadURL
// (infraenv_controller.go updateInfraEnvStatus, lines 735-739), from where
// BMAC copies it into BareMetalHosts. Seen in the rehearsal: without this,
// cluster 0's InfraEnv served node 0's image service URL.
//
// The table is schema-qualified: the restore's session has no search_path
// to rely on (beforeCommit sets one, but this statement must not depend on
// it).
func regenerateImageURLs(ctx context.Context, tx pgx.Tx) (int64, error) {
	tag, err := tx.Exec(ctx, `UPDATE public.infra_envs SET generated = false WHERE generated`)
	if err != nil {
		return 0, fmt.Errorf("mark the infra-envs' discovery images for regeneration on cluster 0: %w", err)
	}
	return tag.RowsAffected(), nil
}

// hasInfraEnvs reports whether the bundle's database holds assisted-service's
// public.infra_envs table (the metadata lists every dumped table).
func hasInfraEnvs(m *bundle.DatabaseInfo) bool {
	if m == nil {
		return false
	}
	for _, t := range m.Tables {
		if t.Schema == "public" && t.Name == "infra_envs" {
			return true
		}
	}
	return false
}
