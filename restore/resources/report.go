package resources

import (
	"encoding/json"
	"io"
	"time"
)

// Action is what happened to one object.
type Action string

// Actions of a Result.
const (
	ActionCreated   Action = "created"
	ActionUpdated   Action = "updated"
	ActionUnchanged Action = "unchanged"
	ActionSkipped   Action = "skipped"
	ActionFailed    Action = "failed"
)

// Result is the outcome for one object, in restore order. It never holds
// object data.
type Result struct {
	ObjectKey
	// Step is the position of the kind in Order.
	Step int `json:"step"`
	// SourceNamespace is the namespace on node 0 when it was mapped.
	SourceNamespace string `json:"sourceNamespace,omitempty"`
	Action          Action `json:"action"`
	// Reason says why (skipped, failed, unchanged) and what the transforms did.
	Reason string `json:"reason,omitempty"`
	// UID is the object's UID on the target (empty for client dry runs).
	UID string `json:"uid,omitempty"`
}

// Report is the outcome of a restore of resources; write it with WriteJSON.
type Report struct {
	FieldManager string         `json:"fieldManager"`
	Existing     ExistingPolicy `json:"existing"`
	DryRun       DryRun         `json:"dryRun"`
	BundleDigest string         `json:"bundleDigest,omitempty"`
	StartedAt    time.Time      `json:"startedAt"`
	FinishedAt   time.Time      `json:"finishedAt"`
	Results      []Result       `json:"results"`
	Counts       map[Action]int `json:"counts"`
	// Error is the error that stopped the restore, if any.
	Error string `json:"error,omitempty"`
}

// Failed reports whether any object failed.
func (r *Report) Failed() bool { return r.Counts[ActionFailed] > 0 || r.Error != "" }

func (r *Report) count() {
	r.Counts = map[Action]int{}
	for _, res := range r.Results {
		r.Counts[res.Action]++
	}
}

// WriteJSON writes the report as indented JSON (the report.json of a failed
// restore, or the -o json result).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
