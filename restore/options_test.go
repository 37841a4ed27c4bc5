package restore

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kubectl-assisted/kubectl-assisted/restore/recreate"
	"github.com/kubectl-assisted/kubectl-assisted/restore/resources"
)

func TestOptionsValidate(t *testing.T) {
	cfg := &rest.Config{Host: "https://cluster0"}
	full := func() Options {
		return Options{Ref: "oci:/b:v1", TargetDB: "postgres://db/x", DataDir: "/data", Namespace: "mce", Config: cfg}
	}
	tests := []struct {
		name    string
		edit    func(o *Options)
		wantErr string
	}{
		{"complete", func(*Options) {}, ""},
		{"no bundle", func(o *Options) { o.Ref = "" }, "no bundle reference"},
		{"no database", func(o *Options) { o.TargetDB = "" }, "no target database"},
		{"database skipped", func(o *Options) { o.TargetDB, o.SkipDatabase = "", true }, ""},
		{"database given and skipped", func(o *Options) { o.SkipDatabase = true }, "contradict"},
		{"no data dir", func(o *Options) { o.DataDir = "" }, "no data directory"},
		{"files skipped", func(o *Options) { o.DataDir, o.SkipFiles = "", true }, ""},
		{"no namespace", func(o *Options) { o.Namespace = "" }, "no namespace"},
		{"no cluster", func(o *Options) { o.Config = nil }, "no cluster 0 configuration"},
		{"no cluster, client dry run of db and files", func(o *Options) {
			o.Config, o.DryRun, o.SkipResources = nil, resources.DryRunClient, true
		}, ""},
		{"no cluster, diff", func(o *Options) { o.Config, o.Diff, o.RecreateResources = nil, true, true }, ""},
		{"diff without database", func(o *Options) { o.Diff, o.TargetDB, o.SkipDatabase = true, "", true }, "loads the database"},
		{"recreate and skip", func(o *Options) { o.RecreateResources, o.SkipResources = true, true }, "contradict"},
		{"manifests and skip", func(o *Options) { o.ManifestsDir, o.SkipResources = "/m", true }, "manifests"},
		{"bad existing", func(o *Options) { o.Existing = "merge" }, "invalid existing policy"},
		{"bad dry run", func(o *Options) { o.DryRun = "maybe" }, "invalid dry-run"},
		{"bad mapping", func(o *Options) { o.NamespaceMapping = map[string]string{"a": ""} }, "namespace mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := full()
			tt.edit(&o)
			err := o.validate()
			var oe *OptionsError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &oe)):
				t.Fatalf("err = %v, want an OptionsError with %q", err, tt.wantErr)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	base := Options{TargetDB: "postgres://admin:pw1@db:5432/installer", DataDir: "/data", Namespace: "mce",
		NamespaceMapping: map[string]string{"a": "b", "c": "d"}, ServiceURL: "https://svc"}
	fp := base.fingerprint(false)
	same := base
	same.TargetDB = "host=db port=5432 user=admin password=other dbname=installer"
	same.NamespaceMapping = map[string]string{"c": "d", "a": "b"}
	same.Existing, same.AcceptDrift, same.Replace = resources.ExistingUpdate, true, true
	if got := same.fingerprint(false); got != fp {
		t.Errorf("a password, map order or stop policy changed the fingerprint: %s != %s", got, fp)
	}
	if strings.Contains(fp, "pw1") {
		t.Error("the fingerprint holds the password")
	}
	for name, edit := range map[string]func(o *Options){
		"database":   func(o *Options) { o.TargetDB = "postgres://admin@db:5432/other" },
		"data dir":   func(o *Options) { o.DataDir = "/other" },
		"mapping":    func(o *Options) { o.NamespaceMapping = map[string]string{"a": "x"} },
		"service":    func(o *Options) { o.ServiceURL = "" },
		"skip files": func(o *Options) { o.SkipFiles = true },
	} {
		o := base
		edit(&o)
		if o.fingerprint(false) == fp {
			t.Errorf("%s does not change the fingerprint", name)
		}
	}
	if base.fingerprint(true) == fp {
		t.Error("re-creating resources does not change the fingerprint")
	}
}

func TestErrors(t *testing.T) {
	dd := &DataDirNotEmptyError{Dir: "/data", Entries: []string{"a", "b"}, More: 3}
	if !errors.Is(dd, ErrTargetNotEmpty) || !strings.Contains(dd.Error(), "a, b and 3 more") || !strings.Contains(dd.Error(), "nothing was changed") {
		t.Errorf("DataDirNotEmptyError: %v", dd)
	}
	var diffs []recreate.Difference
	for i := 0; i < 7; i++ {
		diffs = append(diffs, recreate.Difference{Kind: "InfraEnv", Namespace: "ns", Name: "ie", Field: "spec.x", Column: "infra_envs.x", Object: i, Database: i + 1})
	}
	msg := (&DriftError{Differences: diffs}).Error()
	if !strings.Contains(msg, "7 field(s)") || !strings.Contains(msg, "and 2 more") || !strings.Contains(msg, "--accept-drift") {
		t.Errorf("DriftError: %s", msg)
	}
}
