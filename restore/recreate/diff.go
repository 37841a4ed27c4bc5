package recreate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Difference is one field where an object disagrees with its database row in
// the comparison the controllers make; any Difference makes a controller push
// an update (or unbind a host) once assisted-service starts on cluster 0.
// Its JSON form is stable: scripts read it with `-o json`.
type Difference struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Field is the object's field, e.g. spec.networking.machineNetwork, or
	// "(object)" when the object or its row is missing.
	Field string `json:"field"`
	// Against says what the object is compared with: "database" (the row, as
	// a controller compares them), "exported" (node 0's CR as the bundle
	// exported it) or "manifests" (node 0's install manifest).
	Against string `json:"against"`
	// Column is the database column compared with, e.g. clusters.name
	// (against the database only).
	Column string `json:"column,omitempty"`
	// Object is the re-created object's value; Database the row's as the
	// controller sees it, Node0 node 0's object's (null when absent); secret
	// values read "(redacted)".
	Object   any `json:"object"`
	Database any `json:"database,omitempty"`
	Node0    any `json:"node0,omitempty"`
	// Note says what the controller would do, when it is not a plain update.
	Note string `json:"note,omitempty"`
}

// Redacted replaces secret values in differences and errors.
const Redacted = "(redacted)"

// String renders the difference on one line for people.
func (d Difference) String() string {
	var s string
	if d.Against == AgainstDatabase || d.Against == "" {
		s = fmt.Sprintf("%s %s: %s %s, database %s %s", d.Kind, d.objectName(), d.Field, render(d.Object), d.Column, render(d.Database))
	} else {
		s = fmt.Sprintf("%s %s: %s %s, node 0 (%s) %s", d.Kind, d.objectName(), d.Field, render(d.Object), d.Against, render(d.Node0))
	}
	if d.Note != "" {
		s += " (" + d.Note + ")"
	}
	return s
}

func (d Difference) objectName() string {
	if d.Namespace == "" {
		return d.Name
	}
	return d.Namespace + "/" + d.Name
}

func render(v any) string {
	if v == nil {
		return "<none>"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ExitCode is the exit status of `restore --recreate-resources --diff`, as
// diff(1): 0 without differences, 1 with any, 2 when the check itself failed.
func ExitCode(diffs []Difference, err error) int {
	switch {
	case err != nil:
		return 2
	case len(diffs) > 0:
		return 1
	}
	return 0
}

// Diff compares objs with rows the way the ClusterDeployment, InfraEnv and
// Agent controllers do, finding rows by kube key. rows must carry the kube
// keys (Result.Rows does; rows loaded after restore/kubekeys ran do too).
// Objects of other kinds are only read as the Secrets, ConfigMaps and
// ClusterImageSets the compared objects reference. The result is sorted.
func Diff(objs []*unstructured.Unstructured, rows *Rows) ([]Difference, error) {
	d := &differ{idx: map[string]*unstructured.Unstructured{}, rows: rows}
	for _, o := range objs {
		d.idx[key(o.GetKind(), o.GetNamespace(), o.GetName())] = o
	}
	for _, o := range objs {
		var err error
		switch o.GetKind() {
		case kindCD:
			err = d.clusterDeployment(o)
		case kindInfraEnv:
			err = d.infraEnv(o)
		case kindAgent:
			err = d.agent(o)
		}
		if err != nil {
			return nil, err
		}
	}
	d.missingObjects()
	for i := range d.out {
		d.out[i].Against = AgainstDatabase
	}
	sortDifferences(d.out)
	return d.out, nil
}

type differ struct {
	idx  map[string]*unstructured.Unstructured
	rows *Rows
	out  []Difference
	seen struct{ clusters, infraEnvs, hosts map[string]bool }
}

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func (d *differ) lookup(kind, ns, name string) *unstructured.Unstructured {
	return d.idx[key(kind, ns, name)]
}

// add records a difference between o's field and a column.
func (d *differ) add(o *unstructured.Unstructured, field, column string, obj, db any) {
	d.out = append(d.out, Difference{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(),
		Field: field, Column: column, Object: obj, Database: db})
}

func (d *differ) note(o *unstructured.Unstructured, field, column string, obj, db any, note string) {
	d.add(o, field, column, obj, db)
	d.out[len(d.out)-1].Note = note
}

// str compares two strings and records them when they differ.
func (d *differ) str(o *unstructured.Unstructured, field, column, obj, db string) {
	if obj != db {
		d.add(o, field, column, obj, db)
	}
}

// secret compares two secret strings; only the fact that they differ shows.
func (d *differ) secret(o *unstructured.Unstructured, field, column, obj, db string) {
	if obj != db {
		d.add(o, field, column, redact(obj), redact(db))
	}
}

func redact(s string) any {
	if s == "" {
		return nil
	}
	return Redacted
}

// passwordField finds JSON string members whose name mentions a password or
// a pull secret, as install-config overrides can carry them.
var passwordField = regexp.MustCompile(`(?i)("[^"]*(password|pullsecret|pull_secret)[^"]*"\s*:\s*)"(\\.|[^"\\])*"`)

func redactJSON(s string) string {
	return passwordField.ReplaceAllString(s, `$1"`+Redacted+`"`)
}

// missingObjects reports rows no object describes: without its CR a row is
// never reconciled, and a host without an Agent keeps no binding.
func (d *differ) missingObjects() {
	for _, c := range d.rows.Clusters {
		if !d.seen.clusters[c.ID] {
			d.out = append(d.out, Difference{Kind: kindCD, Namespace: c.KubeKeyNamespace, Name: orDefault(c.KubeKeyName, c.ID),
				Field: "(object)", Column: "clusters.id", Object: nil, Database: c.ID, Note: "no ClusterDeployment for this cluster"})
		}
	}
	for _, ie := range d.rows.InfraEnvs {
		if !d.seen.infraEnvs[ie.ID] {
			d.out = append(d.out, Difference{Kind: kindInfraEnv, Namespace: ie.KubeKeyNamespace, Name: orDefault(ie.Name, ie.ID),
				Field: "(object)", Column: "infra_envs.id", Object: nil, Database: ie.ID, Note: "no InfraEnv for this infra-env"})
		}
	}
	for _, h := range d.rows.Hosts {
		if !d.seen.hosts[h.ID+"/"+h.InfraEnvID] {
			d.out = append(d.out, Difference{Kind: kindAgent, Namespace: h.KubeKeyNamespace, Name: h.ID,
				Field: "(object)", Column: "hosts.id", Object: nil, Database: h.ID, Note: "no Agent for this host"})
		}
	}
}

func (d *differ) markSeen(set *map[string]bool, id string) {
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[id] = true
}

// splitNonEmpty splits a comma list the way the service joined it.
func joinList(list []string) string { return strings.Join(list, ",") }
