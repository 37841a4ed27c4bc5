package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/restore/auth"
	"github.com/kubectl-assisted/kubectl-assisted/restore/job"
	"github.com/kubectl-assisted/kubectl-assisted/restore/switchover"
	"github.com/kubectl-assisted/kubectl-assisted/restore/waitfor"
)

var (
	ascGVR = schema.GroupVersionResource{Group: "agent-install.openshift.io", Version: "v1beta1", Resource: "agentserviceconfigs"}
	// ascName is the only name the operator reconciles.
	ascName = "agent"
	// serviceDeployment is the operator's assisted-service Deployment.
	serviceDeployment = "assisted-service"
	// provenanceAnnotation marks objects migrate created, with the bundle digest.
	provenanceAnnotation = "kubectl-assisted.io/bundle-digest"
)

func digestOf(s string) digest.Digest { return digest.Digest(s) }

// ---- preflight ----

// preflight checks node 0's database and cluster 0 before anything changes;
// only then, with --force, scales a running assisted-service to zero.
func (o *MigrateOptions) preflight(ctx context.Context) (string, error) {
	var notes []string
	if o.sourceConn != "" && !o.state.done(stepBundle) {
		n, who, err := otherSessions(ctx, o.sourceConn)
		if err != nil {
			return "", fmt.Errorf("node 0's database: %w", err)
		}
		switch {
		case n > 0 && !o.Live:
			return "", clierr.New(fmt.Errorf("%d other session(s) are connected to node 0's database (%s): assisted-service is still writing", n, who),
				"Stop assisted-service on node 0 first (its pod or systemd unit), or pass --live to dump from one snapshot and record a write watermark.", clierr.ExitError)
		case n > 0:
			notes = append(notes, fmt.Sprintf("--live: %d session(s) still connected, dumping from a snapshot", n))
		default:
			notes = append(notes, "node 0's database is idle")
		}
	}
	if _, err := o.client.Discovery().ServerVersion(); err != nil {
		return "", fmt.Errorf("cluster 0's API at %s: %w", o.config.Host, err)
	}
	dyn, err := dynamic.NewForConfig(o.config)
	if err != nil {
		return "", err
	}
	asc, err := dyn.Resource(ascGVR).Get(ctx, ascName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("look for an AgentServiceConfig on cluster 0: %w", err)
	case o.state.Digest != "" && asc.GetAnnotations()[provenanceAnnotation] == o.state.Digest:
		notes = append(notes, "the AgentServiceConfig is the one this migration created")
	default:
		return "", clierr.New(errors.New("cluster 0 already has an AgentServiceConfig: the operator would start assisted-service on an empty database before the restore"),
			"Delete it (kubectl delete agentserviceconfig agent) and let migrate create it after the restore (--agent-service-config), or restore into another cluster.", clierr.ExitError)
	}
	dep, err := o.client.AppsV1().Deployments(o.Namespace).Get(ctx, serviceDeployment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("look for a running assisted-service on cluster 0: %w", err)
	case dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0:
		notes = append(notes, "assisted-service on cluster 0 is scaled to zero")
	case !o.Force && !o.state.done(stepService):
		return "", clierr.New(fmt.Errorf("assisted-service is running on cluster 0 (Deployment %s/%s): restoring under it would lose data", o.Namespace, serviceDeployment),
			"Scale it to zero (kubectl scale deployment/assisted-service --replicas=0) or pass --force to have migrate do it.", clierr.ExitError)
	case o.Force && !o.state.done(stepService):
		zero := int32(0)
		dep.Spec.Replicas = &zero
		if _, err := o.client.AppsV1().Deployments(o.Namespace).Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
			return "", fmt.Errorf("--force: scale assisted-service to zero: %w", err)
		}
		notes = append(notes, "--force: scaled assisted-service on cluster 0 to zero")
	}
	notes = append(notes, fmt.Sprintf("cluster 0 reachable (%s), namespace %s", o.config.Host, o.Namespace))
	return strings.Join(notes, "; "), nil
}

// otherSessions counts the client sessions on the source database other than
// ours, and says who they are (application@address).
func otherSessions(ctx context.Context, connString string) (int, string, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close(context.Background())
	var n int
	var who *string
	err = conn.QueryRow(ctx, `SELECT count(*), string_agg(DISTINCT coalesce(nullif(application_name, ''), 'client') || '@' || coalesce(host(client_addr), 'local'), ', ')
		FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n, &who)
	if err != nil {
		return 0, "", err
	}
	if who == nil {
		return n, "", nil
	}
	return n, *who, nil
}

// readWatermark records the WAL position just before a --live dump.
func readWatermark(ctx context.Context, connString string) (*writeWatermark, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	w := &writeWatermark{}
	err = conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, now(),
		(SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend')`).
		Scan(&w.WALLSN, &w.Time, &w.Sessions)
	if err != nil {
		return nil, fmt.Errorf("read the write watermark: %w", err)
	}
	w.Time = w.Time.UTC()
	return w, nil
}

// sourceClusterResources exports the assisted CRs from node 0's API.
func sourceClusterResources(kubeconfig string, namespaces []string) (*resources.ClusterSource, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--source-kubeconfig: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &resources.ClusterSource{Client: dyn, Namespaces: namespaces}, nil
}

// ---- restore ----

func (o *MigrateOptions) restore(ctx context.Context) (string, error) {
	if o.direct {
		return o.restoreDirect(ctx)
	}
	return o.restoreJob(ctx)
}

// restoreArgs are the `restore` flags both modes share.
func (o *MigrateOptions) restoreArgs() []string {
	args := []string{"-n", o.Namespace}
	if o.ServiceURL != "" {
		args = append(args, "--service-url", o.ServiceURL)
	}
	for _, m := range o.NamespaceMapping {
		args = append(args, "--namespace-mapping", m)
	}
	if o.Registry.PlainHTTP {
		args = append(args, "--plain-http")
	}
	if o.Registry.InsecureSkipTLSVerify {
		args = append(args, "--registry-insecure-skip-tls-verify")
	}
	return args
}

// restoreDirect runs this binary's `restore` command as a child process: the
// same code the restore Job runs, with node 0's view of cluster 0's database
// and storage. The database password goes through PGPASSWORD, never the
// command line.
func (o *MigrateOptions) restoreDirect(ctx context.Context) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	_, idFile, err := o.identityText()
	if err != nil {
		return "", err
	}
	cmd, err := o.childRestoreCommand(ctx, exe, idFile)
	if err != nil {
		return "", err
	}
	cmd.Stderr = o.log
	setChildDiesWithParent(cmd)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("restore exited with code %d (its message is above)", ee.ExitCode())
		}
		return "", err
	}
	var r struct {
		Phases []struct {
			Phase string `json:"phase"`
			Ran   bool   `json:"ran"`
		} `json:"phases"`
	}
	_ = json.Unmarshal(out, &r)
	ran := 0
	for _, p := range r.Phases {
		if p.Ran {
			ran++
		}
	}
	return fmt.Sprintf("restored directly into the target database and %s (%d phase(s) ran)", o.TargetDataDir, ran), nil
}

// childRestoreCommand is the `restore` child of a direct migrate. The
// target database's password, in whatever form the DSN holds it (URL
// userinfo, URL ?password=, key=value with or without spaces and quotes),
// goes through PGPASSWORD, never argv, where any local user reads it (ps,
// /proc/PID/cmdline).
func (o *MigrateOptions) childRestoreCommand(ctx context.Context, exe, idFile string) (*exec.Cmd, error) {
	dsn, password, err := splitPassword(o.TargetDB)
	if err != nil {
		return nil, fmt.Errorf("--target-db: %w", err)
	}
	args := []string{"restore", o.state.Pinned, "--db", dsn, "--data-dir", o.TargetDataDir,
		"--kubeconfig", o.TargetKubeconfig, "-o", "json"}
	if o.TargetContext != "" {
		args = append(args, "--context", o.TargetContext)
	}
	if idFile != "" {
		args = append(args, "--identity", idFile)
	}
	// The run's own signing key signed the bundle: the restore accepts
	// only a bundle signed by it.
	args = append(args, "--signer", o.state.signerPath())
	if o.Registry.ConfigFile != "" {
		args = append(args, "--registry-config", o.Registry.ConfigFile)
	}
	if o.Registry.CAFile != "" {
		args = append(args, "--ca-file", o.Registry.CAFile)
	}
	if !o.Terminal.ShowProgress(o.log, &o.Output) {
		args = append(args, "--no-progress")
	}
	args = append(args, o.restoreArgs()...)
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PGPASSWORD=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if password != "" {
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
	}
	return cmd, nil
}

// splitPassword removes the password from a PostgreSQL connection string,
// URL or key=value, and returns it separately. It refuses a string it
// cannot take apart rather than pass it on with the password inside.
func splitPassword(dsn string) (string, string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", "", errors.New("not a valid PostgreSQL URL")
		}
		var pw string
		if u.User != nil {
			if p, ok := u.User.Password(); ok {
				pw = p
				u.User = url.User(u.User.Username())
			}
		}
		q := u.Query()
		if q.Has("password") {
			pw = q.Get("password")
			q.Del("password")
			u.RawQuery = q.Encode()
		}
		return u.String(), pw, nil
	}
	pairs, err := parseConninfo(dsn)
	if err != nil {
		return "", "", err
	}
	var kept []string
	var pw string
	for _, p := range pairs {
		if p.key == "password" {
			pw = p.value
			continue
		}
		kept = append(kept, p.raw)
	}
	return strings.Join(kept, " "), pw, nil
}

type conninfoPair struct{ key, value, raw string }

// parseConninfo splits a libpq key=value connection string the way libpq
// does (conninfo_parse): spaces around '=' allowed, values single-quoted
// with backslash escapes, or bare up to the next space.
func parseConninfo(s string) ([]conninfoPair, error) {
	var out []conninfoPair
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' }
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && !isSpace(s[i]) && s[i] != '=' {
			i++
		}
		key := s[start:i]
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) || s[i] != '=' || key == "" {
			return nil, errors.New("not a valid key=value connection string (missing \"=\" after a keyword)")
		}
		i++
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		var val strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					val.WriteByte(s[i+1])
					i += 2
					continue
				}
				i++
				if c == '\'' {
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return nil, errors.New("not a valid key=value connection string (unterminated quoted value)")
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' && i+1 < len(s) {
					val.WriteByte(s[i+1])
					i += 2
					continue
				}
				val.WriteByte(s[i])
				i++
			}
		}
		out = append(out, conninfoPair{key: key, value: val.String(), raw: s[start:i]})
	}
}

// restoreJob applies the restore Job (and its PVCs, Secrets and RBAC) on
// cluster 0 with server-side apply.
func (o *MigrateOptions) restoreJob(ctx context.Context) (string, error) {
	idText, _, err := o.identityText()
	if err != nil {
		return "", err
	}
	if idText == "" {
		return "", errors.New("the restore Job needs the age identity: this bundle is unencrypted, and the Job only restores encrypted bundles")
	}
	_, signerPEM, err := o.state.signer()
	if err != nil {
		return "", err
	}
	regAuth, err := registryAuthFor(o.Registry.ConfigFile, o.ref.Registry)
	if err != nil {
		return "", err
	}
	jo := job.Options{
		Namespace: o.Namespace, Ref: o.state.Pinned, Digest: o.state.Digest,
		RestoreImage: o.RestoreImage, DatabaseImage: o.DatabaseImage,
		DatabaseSize: o.asc.DatabaseSize, FilesystemSize: o.asc.FilesystemSize,
		Identity: idText, Signer: signerPEM, RegistryAuth: regAuth, ExtraArgs: o.restoreArgs()[2:],
	}
	if o.StorageClass != "" {
		jo.StorageClassName = &o.StorageClass
	}
	objs, err := job.Objects(jo)
	if err != nil {
		return "", err
	}
	// The Job's PostgreSQL sidecar initialises the database with the postgres
	// Secret's credentials, which the operator then adopts: it must exist first
	// (an existing one wins).
	creds, err := auth.DefaultPostgresCredentials()
	if err != nil {
		return "", err
	}
	if _, _, err := auth.EnsurePostgresSecret(ctx, o.client, o.Namespace, creds); err != nil {
		return "", fmt.Errorf("the postgres Secret for the restore Job: %w", err)
	}
	if err := applyObjects(ctx, o.config, objs, ""); err != nil {
		return "", err
	}
	return fmt.Sprintf("applied Job %s/%s (PVCs %s, %s)", o.Namespace, job.JobName(o.state.Digest),
		o.asc.DatabaseSize.String(), o.asc.FilesystemSize.String()), nil
}

// registryAuthFor keeps only the entry of a docker config.json for host, so
// the Secret on cluster 0 holds no other registry's credentials.
func registryAuthFor(configFile, host string) ([]byte, error) {
	if configFile == "" || host == "" {
		return nil, nil
	}
	data, err := os.ReadFile(configFile)
	if err != nil {
		return nil, fmt.Errorf("--registry-config: %w", err)
	}
	var cfg struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("--registry-config %s: not a docker config.json: %v", configFile, err)
	}
	for k, v := range cfg.Auths {
		if strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://") == host {
			return json.Marshal(map[string]any{"auths": map[string]json.RawMessage{host: v}})
		}
	}
	return nil, nil
}

// applyObjects server-side applies typed or unstructured objects, in order.
func applyObjects(ctx context.Context, cfg *rest.Config, objs []runtime.Object, digest string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	force := true
	for _, obj := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if digest != "" {
			a := u.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[provenanceAnnotation] = digest
			u.SetAnnotations(a)
		}
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s: cluster 0 does not serve it: %w", gvk.Kind, err)
		}
		body, err := json.Marshal(u)
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == "namespace" {
			ri = dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "kubectl-assisted", Force: &force}); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, u.GetName(), err)
		}
	}
	return nil
}

// ---- wait ----

func (o *MigrateOptions) wait(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	last := ""
	rec, err := waitfor.Wait(ctx, o.client, o.Namespace, o.state.Digest, waitfor.Options{
		Interval: 2 * time.Second,
		OnStatus: func(s waitfor.Status) {
			msg := s.State
			if s.Phase != "" {
				msg += " (phase " + s.Phase + ")"
			}
			if s.Err != nil {
				msg += ": " + s.Err.Error()
			}
			if msg != last {
				fmt.Fprintf(o.log, "  %s\n", msg)
				last = msg
			}
		},
	})
	if err != nil {
		if errors.Is(err, waitfor.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			hint := "Run the same command again to keep waiting."
			if !o.direct {
				hint = fmt.Sprintf("Look at the Job: kubectl -n %s logs job/%s --all-containers; then run the same command again to keep waiting.", o.Namespace, job.JobName(o.state.Digest))
			}
			return "", clierr.New(fmt.Errorf("no receipt for %s on cluster 0 after %s", o.state.Digest, o.Timeout), hint, clierr.ExitError)
		}
		return "", err
	}
	return fmt.Sprintf("receipt for %s with phases %s", rec.BundleDigest, strings.Join(rec.Phases, ",")), nil
}

// ---- service ----

// agentServiceConfig is the part of --agent-service-config migrate checks.
type agentServiceConfig struct {
	Object                       *unstructured.Unstructured
	DatabaseSize, FilesystemSize resource.Quantity
}

func readAgentServiceConfig(path string) (*agentServiceConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--agent-service-config: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		return nil, fmt.Errorf("--agent-service-config %s: %v", path, err)
	}
	if u.GetKind() != "AgentServiceConfig" || u.GroupVersionKind().Group != ascGVR.Group {
		return nil, fmt.Errorf("--agent-service-config %s: want an AgentServiceConfig (%s), got %q", path, ascGVR.Group, u.GetAPIVersion()+" "+u.GetKind())
	}
	if u.GetName() != ascName {
		return nil, fmt.Errorf("--agent-service-config %s: the operator only reconciles the AgentServiceConfig named %q, not %q", path, ascName, u.GetName())
	}
	a := &agentServiceConfig{Object: u}
	for field, q := range map[string]*resource.Quantity{"databaseStorage": &a.DatabaseSize, "filesystemStorage": &a.FilesystemSize} {
		s, _, _ := unstructured.NestedString(u.Object, "spec", field, "resources", "requests", "storage")
		if s == "" {
			return nil, fmt.Errorf("--agent-service-config %s: spec.%s.resources.requests.storage is required", path, field)
		}
		v, err := resource.ParseQuantity(s)
		if err != nil {
			return nil, fmt.Errorf("--agent-service-config %s: spec.%s storage %q: %v", path, field, s, err)
		}
		*q = v
	}
	return a, nil
}

// service creates the AgentServiceConfig now that the receipt exists; the PVCs
// the operator will use must already have its sizes.
func (o *MigrateOptions) service(ctx context.Context) (string, error) {
	if o.asc == nil {
		return "skipped: no --agent-service-config; the restore is complete, create the AgentServiceConfig now", nil
	}
	for name, want := range map[string]resource.Quantity{job.DatabasePVC: o.asc.DatabaseSize, job.FilesystemPVC: o.asc.FilesystemSize} {
		pvc, err := o.client.CoreV1().PersistentVolumeClaims(o.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if got.Cmp(want) != 0 {
			return "", clierr.New(fmt.Errorf("PVC %s/%s requests %s but the AgentServiceConfig asks for %s", o.Namespace, name, got.String(), want.String()),
				"Make the AgentServiceConfig's storage requests equal the PVCs' (the operator cannot shrink a PVC).", clierr.ExitError)
		}
	}
	if err := applyObjects(ctx, o.config, []runtime.Object{o.asc.Object.DeepCopy()}, o.state.Digest); err != nil {
		return "", err
	}
	return "created AgentServiceConfig " + ascName + " after the receipt", nil
}

// ---- switchover ----

func (o *MigrateOptions) switchover(ctx context.Context) (string, error) {
	if o.ServiceURL == "" {
		return "skipped: no --service-url; run 'switchover --service-url URL' when it is known", nil
	}
	id := o.ClusterID
	if id == "" {
		ids, err := o.clusterIDs(ctx)
		if err != nil {
			return "", err
		}
		if len(ids) != 1 {
			return "", clierr.New(fmt.Errorf("the bundle holds %d clusters (%s): which one is cluster 0?", len(ids), strings.Join(ids, ", ")),
				"Give --cluster-id with cluster 0's id.", clierr.ExitError)
		}
		id = ids[0]
	}
	kp, _, err := auth.EnsureLocalAuthSecret(ctx, o.client, o.Namespace)
	if err != nil {
		return "", fmt.Errorf("cluster 0's local auth key: %w", err)
	}
	tok, err := kp.MintClusterToken(id, auth.MintOptions{})
	if err != nil {
		return "", err
	}
	if err := o.saveHandoverToken(ctx, tok.Reveal()); err != nil {
		return "", err
	}
	pub, err := kp.PublicPEM()
	if err != nil {
		return "", err
	}
	// A controller token that already verifies on cluster 0 (node 0's key was
	// carried in the bundle) is kept.
	res, err := switchover.Run(ctx, o.client, switchover.Options{Namespace: o.ControllerNamespace, ServiceURL: o.ServiceURL, Token: tok.Reveal(), CACertPath: o.CACertPath, LocalAuthPublicKey: pub})
	if errors.Is(err, switchover.ErrControllerNotFound) {
		return "skipped: no assisted-installer-controller on cluster 0, nothing to switch (token left in Secret " + HandoverSecret + ")", nil
	}
	if err != nil {
		return "", err
	}
	kept := ""
	if res.TokenKept {
		kept = ", its token kept: it verifies on cluster 0"
	}
	return fmt.Sprintf("controller switched to %s (%d change(s), %d pod(s) restarted%s)", o.ServiceURL, len(res.Changes), len(res.RestartedPods), kept), nil
}

// clusterIDs are the bundle's clusters: from its file storage, else from the
// restored database.
func (o *MigrateOptions) clusterIDs(ctx context.Context) ([]string, error) {
	if len(o.state.ClusterIDs) > 0 || !o.direct {
		return o.state.ClusterIDs, nil
	}
	conn, err := pgx.Connect(ctx, o.TargetDB)
	if err != nil {
		return nil, fmt.Errorf("cluster 0's database: %w", err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT id FROM clusters WHERE deleted_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// saveHandoverToken leaves the controller's token where `switchover` finds it.
func (o *MigrateOptions) saveHandoverToken(ctx context.Context, token string) error {
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: HandoverSecret, Namespace: o.Namespace, Labels: map[string]string{job.ManagedByLabel: job.ManagedBy}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{HandoverTokenKey: []byte(token)},
	}
	return applyObjects(ctx, o.config, []runtime.Object{s}, o.state.Digest)
}
