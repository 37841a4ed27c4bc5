package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
)

// Summary is the demo's result: what moved, how big, how long. It is printed
// as a table and, with -summary FILE, written as JSON (the demo's test reads
// it). It never holds a secret.
type Summary struct {
	OK           bool           `json:"ok"`
	Steps        []StepResult   `json:"steps"`
	TotalSeconds float64        `json:"totalSeconds"`
	Migration    *migration     `json:"migration,omitempty"`
	Bundle       BundleResult   `json:"bundle"`
	Database     DatabaseResult `json:"database"`
	Files        FilesResult    `json:"files"`
	Objects      ObjectsResult  `json:"objects"`
	// Receipt is true when `wait-for restore-complete` found the receipt.
	Receipt bool `json:"receipt"`
	// ControllerURL is where the assisted-installer-controller reports after
	// the migration (cluster 0's service when switched over).
	ControllerURL string    `json:"controllerURL,omitempty"`
	ISO           ISOResult `json:"iso"`
	// SecretsInOutput names (never shows) the planted secrets that appeared in
	// the demo's output; it must stay empty.
	SecretsInOutput []string `json:"secretsInOutput,omitempty"`
	Notes           []string `json:"notes,omitempty"`
}

// BundleResult is the bundle as `bundle inspect` showed it.
type BundleResult struct {
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	// Size is the manifest, config and layers together.
	Size      int64 `json:"size"`
	Layers    int   `json:"layers"`
	Encrypted bool  `json:"encrypted"`
}

// DatabaseResult is the row counts on both sides.
type DatabaseResult struct {
	Tables []TableCount `json:"tables"`
	// RowsSeeded is every row on node 0; RowsSeededBundled only those of the
	// tables the bundle carries, which RowsRestored must equal.
	RowsSeeded        int64 `json:"rowsSeeded"`
	RowsSeededBundled int64 `json:"rowsSeededBundled"`
	RowsRestored      int64 `json:"rowsRestored"`
	// Compared is true once cluster 0's rows were counted.
	Compared bool `json:"compared"`
}

// TableCount is one table's rows on node 0, in the bundle (its metadata) and
// on cluster 0. Bundled is false for a table whose rows the bundle leaves
// out on purpose (the release_images cache).
type TableCount struct {
	Name     string `json:"name"`
	Node0    int64  `json:"node0"`
	InBundle int64  `json:"inBundle"`
	Cluster0 int64  `json:"cluster0"`
	Bundled  bool   `json:"bundled"`
}

// FilesResult compares the file storages (node 0's without its installer cache).
type FilesResult struct {
	Node0Files     int64 `json:"node0Files"`
	Node0Bytes     int64 `json:"node0Bytes"`
	Node0Xattrs    int64 `json:"node0Xattrs"`
	Cluster0Files  int64 `json:"cluster0Files"`
	Cluster0Bytes  int64 `json:"cluster0Bytes"`
	Cluster0Xattrs int64 `json:"cluster0Xattrs"`
	// Identical counts node 0's files that cluster 0 holds byte for byte.
	Identical int `json:"identical"`
	// Compared is true once cluster 0's files were counted.
	Compared bool `json:"compared"`
}

// ObjectsResult counts the ABI manifests' objects and what is on cluster 0.
type ObjectsResult struct {
	Manifests int            `json:"manifests"`
	Restored  map[string]int `json:"restored"`
	Total     int            `json:"total"`
}

// ISOResult is the day-2 ISO.
type ISOResult struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Exists bool   `json:"exists"`
}

func (s *Summary) setBundle(ref string, in *inspection) {
	s.Bundle = BundleResult{Reference: ref, Digest: in.Digest, Size: in.Size, Layers: len(in.Layers), Encrypted: len(in.Layers) > 0}
	for _, l := range in.Layers {
		s.Bundle.Size += l.Size
		s.Bundle.Encrypted = s.Bundle.Encrypted && l.Encrypted
	}
}

// finish decides whether the demo succeeded: every step, and no secret in
// the output.
func (s *Summary) finish() {
	s.OK = len(s.Steps) > 0 && len(s.SecretsInOutput) == 0
	for _, st := range s.Steps {
		s.OK = s.OK && st.Status == statusOK
	}
}

func printSummary(w io.Writer, s *Summary) {
	line := strings.Repeat("─", 78)
	fmt.Fprintf(w, "\n%s\nSummary\n\n", line)
	row := func(what, node0, cluster0 string) { fmt.Fprintf(w, "  %-16s %-26s %s\n", what, node0, cluster0) }
	row("what moved", "node 0", "cluster 0")
	db := s.Database
	node0, cluster0 := "-", "-"
	if len(db.Tables) > 0 {
		node0 = fmt.Sprintf("%d in %d tables", db.RowsSeeded, len(db.Tables))
	}
	if db.Compared {
		bundled := 0
		for _, t := range db.Tables {
			if t.Bundled {
				bundled++
			}
		}
		cluster0 = fmt.Sprintf("%d in the %d bundled tables (node 0: %d)", db.RowsRestored, bundled, db.RowsSeededBundled)
	}
	row("database rows", node0, cluster0)
	f := s.Files
	node0, cluster0 = "-", "-"
	if f.Node0Files > 0 {
		node0 = fmt.Sprintf("%d, %s", f.Node0Files, humanBytes(f.Node0Bytes))
	}
	if f.Compared {
		cluster0 = fmt.Sprintf("%d, %s (%d identical, %d/%d source xattrs)", f.Cluster0Files, humanBytes(f.Cluster0Bytes), f.Identical, f.Cluster0Xattrs, f.Node0Xattrs)
	}
	row("files", node0, cluster0)
	o := s.Objects
	node0, cluster0 = "-", "-"
	if o.Manifests > 0 {
		node0 = fmt.Sprintf("%d in the ABI manifests", o.Manifests)
	}
	if o.Restored != nil {
		kinds := make([]string, 0, len(o.Restored))
		for k, n := range o.Restored {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(kinds)
		cluster0 = fmt.Sprintf("%d on the API: %s", o.Total, strings.Join(kinds, ", "))
	}
	row("objects", node0, cluster0)
	if s.Receipt {
		row("receipt", "", "written (wait-for restore-complete returned)")
	}
	if s.ControllerURL != "" {
		row("controller", node0ServiceURL, s.ControllerURL)
	}
	fmt.Fprintln(w)
	if b := s.Bundle; b.Digest != "" {
		enc := "unencrypted"
		if b.Encrypted {
			enc = "age-encrypted"
		}
		fmt.Fprintf(w, "  bundle           %s in %d layers, %s\n                   %s\n", humanBytes(b.Size), b.Layers, enc, b.Reference)
	}
	if s.ISO.Exists {
		fmt.Fprintf(w, "  day-2 ISO        %s, %s\n", s.ISO.Path, humanBytes(s.ISO.Size))
	}
	if s.Migration != nil {
		fmt.Fprintf(w, "  migration via    %s\n", s.Migration.Via)
	}
	fmt.Fprintf(w, "\n  %-3s %-12s %-8s %8s\n", "#", "step", "status", "time")
	for _, st := range s.Steps {
		t := "-"
		if st.Status != statusNotRun {
			t = fmtDuration(st.DurationSeconds)
		}
		fmt.Fprintf(w, "  %-3d %-12s %-8s %8s\n", st.Number, st.Name, st.Status, t)
	}
	fmt.Fprintf(w, "  %-3s %-12s %-8s %8s\n", "", "total", "", fmtDuration(s.TotalSeconds))
	for _, n := range s.Notes {
		fmt.Fprintf(w, "\n  note: %s\n", n)
	}
	if len(s.SecretsInOutput) > 0 {
		fmt.Fprintf(w, "\n  SECRETS LEAKED into the output: %s\n", strings.Join(s.SecretsInOutput, ", "))
	}
	if s.OK {
		fmt.Fprintf(w, "\nThe demo succeeded.\n")
	} else {
		var failed []string
		for _, st := range s.Steps {
			if st.Status != statusOK {
				failed = append(failed, fmt.Sprintf("%d %s (%s)", st.Number, st.Name, st.Status))
			}
		}
		fmt.Fprintf(w, "\nThe demo did NOT succeed: %s.\n", strings.Join(failed, ", "))
	}
}

func writeSummaryJSON(path string, s *Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// recorder keeps a copy of everything the demo prints, to check it for the
// secrets it planted.
type recorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) tee(w io.Writer) io.Writer { return &teeWriter{w: w, r: r} }

type teeWriter struct {
	w io.Writer
	r *recorder
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.r.mu.Lock()
	t.r.buf.Write(p)
	t.r.mu.Unlock()
	return t.w.Write(p)
}

// record keeps output that was not printed (a command's captured output).
func (r *recorder) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.WriteString(s)
}

// leaked names the secrets that appear in what was recorded.
func (r *recorder) leaked(secrets map[string]string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, v := range secrets {
		if v != "" && bytes.Contains(r.buf.Bytes(), []byte(v)) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
