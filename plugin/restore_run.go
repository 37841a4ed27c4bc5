package plugin

import (
	"context"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/progress"
	"github.com/kubectl-assisted/kubectl-assisted/restore"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

// resolve reads the key files, the namespace, cluster 0's configuration and
// the target database into restore.Options.
func (o *RestoreOptions) resolve(ctx context.Context) error {
	ids, err := readIdentities(o.Identities)
	if err != nil {
		return o.usage(err)
	}
	signers, err := o.Sign.keys()
	if err != nil {
		return o.usage(err)
	}
	ns, _, err := o.env.Kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return o.usage(fmt.Errorf("namespace: %w", err))
	}
	ro := restore.Options{
		Ref: o.Ref, Registry: registryOptions(o.Registry), Identities: ids,
		Signers: signers, AllowUnsigned: o.Sign.AllowUnsigned,
		DataDir: o.DataDir, SkipDatabase: o.SkipDatabase, SkipFiles: o.SkipFiles, PreserveSpecialBits: o.PreserveSpecialBits,
		DatabaseWait: o.DatabaseWait, DatabaseMajor: o.DatabaseMajor,
		Namespace: ns, NamespaceMapping: o.mapping, ServiceURL: o.ServiceURL, ImageServiceURL: o.ImageServiceURL, ClusterZero: o.clusterZero,
		SkipResources: o.SkipResources, RecreateResources: o.RecreateResources, ManifestsDir: o.ManifestsDir,
		Diff: o.Diff, AcceptDrift: o.AcceptDrift, Existing: resources.ExistingPolicy(o.Existing),
		DryRun: resources.DryRun(o.DryRun), Replace: o.Replace,
	}
	if o.Diff && !o.SkipFiles && o.DataDir == "" {
		ro.SkipFiles = true // the drift check never touches files
	}
	if o.NoCluster {
		ro.SkipResources = true
		if ro.TargetDB, err = o.targetDB(ctx, nil, ns); err != nil {
			return err
		}
		o.opts = ro
		return nil
	}
	// Cluster 0 is needed for everything but a drift check or a dry run of
	// the database and files alone with an explicit database.
	cfg, cfgErr := o.env.Kube.ToRESTConfig()
	restoreNeedsCluster := !o.Diff && !(ro.DryRun != resources.DryRunNone && o.SkipResources)
	secretNeedsCluster := !o.Postgres.IsSet() && !o.SkipDatabase
	if cfgErr != nil && (restoreNeedsCluster || secretNeedsCluster) {
		return clierr.New(fmt.Errorf("cluster 0's kubeconfig: %w", cfgErr), "Pass --kubeconfig (and --context), or run inside cluster 0.", clierr.ExitUsage)
	}
	if restoreNeedsCluster {
		ro.Config = withRestoreRate(cfg)
	}
	if !o.SkipDatabase {
		if ro.TargetDB, err = o.targetDB(ctx, cfg, ns); err != nil {
			return err
		}
	}
	o.opts = ro
	return nil
}

// withRestoreRate lifts client-go's default client-side limit (5 requests a
// second), which would make a restore of a few dozen objects wait seconds
// between writes; the API server's own priority and fairness still applies.
func withRestoreRate(cfg *rest.Config) *rest.Config {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = 50, 100
	}
	return cfg
}

// targetDB resolves the database flags, or the operator's postgres Secret.
func (o *RestoreOptions) targetDB(ctx context.Context, cfg *rest.Config, ns string) (string, error) {
	if o.Postgres.IsSet() {
		cs, err := o.Postgres.ConnString()
		if err != nil {
			return "", clierr.New(err, "Check the file or variables that name the target database (--db-env-file, --db-from-env).", clierr.ExitUsage)
		}
		return cs, nil
	}
	if cfg == nil {
		return "", o.usage(fmt.Errorf("no target database: pass --db, --db-env-file or --db-from-env, or a kubeconfig to read the postgres Secret of -n"))
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	creds, err := auth.ReadPostgresSecret(ctx, c, ns)
	if err != nil {
		return "", clierr.New(fmt.Errorf("no target database given and %w", err),
			"Pass --db, --db-env-file or --db-from-env, or restore into the namespace whose postgres Secret names the database (-n).", clierr.ExitUsage)
	}
	return creds.URL().String(), nil
}

// parseNamespaceMapping reads OLD=NEW pairs, repeatable or comma-separated.
func parseNamespaceMapping(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		for _, pair := range strings.Split(v, ",") {
			pair = strings.TrimSpace(pair)
			if pair == "" {
				continue
			}
			from, to, ok := strings.Cut(pair, "=")
			from, to = strings.TrimSpace(from), strings.TrimSpace(to)
			if !ok || from == "" || to == "" {
				return nil, fmt.Errorf("--namespace-mapping %q: want OLD=NEW", pair)
			}
			if prev, dup := out[from]; dup && prev != to {
				return nil, fmt.Errorf("--namespace-mapping maps %s twice (%s and %s)", from, prev, to)
			}
			out[from] = to
		}
	}
	return out, nil
}

// Run resolves the inputs, restores and prints the result.
func (o *RestoreOptions) Run(ctx context.Context) error {
	if err := o.resolve(ctx); err != nil {
		return err
	}
	env := o.env
	var bars *progress.Bars
	if o.Terminal.ShowProgress(env.Streams.ErrOut, &o.Output) {
		bars = progress.New(env.Streams.ErrOut, progress.Options{})
		o.opts.Progress = bars
	}
	ev := &eventPrinter{w: env.Streams.ErrOut}
	o.opts.OnEvent = ev.print
	res, err := restore.Run(ctx, o.opts)
	if bars != nil {
		bars.Wait()
	}
	if o.Diff {
		return o.finishDiff(res, err)
	}
	if err != nil {
		o.writeReport(res)
		return restoreError(err)
	}
	out := newRestoreResult(res)
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, out)
	}
	return printRestoreResult(env.Streams.Out, env.Caller, out)
}

// writeReport writes the per-object report of a failed apply or check.
func (o *RestoreOptions) writeReport(res *restore.Result) {
	errOut := o.env.Streams.ErrOut
	if res == nil || res.Resources == nil || o.ReportFile == "" || !res.Resources.Failed() {
		return
	}
	f, err := os.OpenFile(o.ReportFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err == nil {
		err = res.Resources.WriteJSON(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(errOut, "warning: could not write the report: %v\n", err)
		return
	}
	fmt.Fprintf(errOut, "per-object report written to %s\n", o.ReportFile)
}

// finishDiff prints the differences and exits like diff(1).
func (o *RestoreOptions) finishDiff(res *restore.Result, err error) error {
	out, errOut := o.env.Streams.Out, o.env.Streams.ErrOut
	if err != nil {
		mapped := restoreError(err)
		if clierr.ExitCode(mapped) == clierr.ExitError {
			return clierr.New(err, "", clierr.ExitUsage) // diff(1): above 1 is trouble
		}
		return mapped
	}
	diffs := res.Drift
	if o.Output.Machine() {
		if diffs == nil {
			diffs = []recreateDifference{}
		}
		if perr := o.Output.Print(out, diffs); perr != nil {
			return perr
		}
	} else {
		for _, d := range diffs {
			fmt.Fprintln(out, d.String())
		}
		if len(diffs) == 0 {
			fmt.Fprintln(errOut, "the re-created resources agree with the database and with node 0's CRs")
		}
	}
	if len(diffs) > 0 {
		return clierr.Silent(clierr.ExitError)
	}
	return nil
}
