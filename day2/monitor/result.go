package monitor

import (
	"time"
)

// Stage is one step of a new host's way to a Ready node. Stages are reported
// once each, when first observed; a later stage can be observed before an
// earlier one (a Node can register before the serving CSR is approved).
type Stage string

// The stages, in their usual order.
const (
	StageReachable         Stage = "Reachable"          // something answers on one of the host's IPs
	StageAssistedServiceUp Stage = "AssistedServiceUp"  // the host's local assisted-service REST API answers
	StageValidationsPassed Stage = "ValidationsPassing" // no assisted-service validation is failing
	StageInstalling        Stage = "Installing"         // installation to disk started
	StageKubeletUp         Stage = "KubeletUp"          // the kubelet port (10250) accepts connections
	StageFirstCSRPending   Stage = "FirstCSRPending"    // the kubelet's client CSR exists
	StageFirstCSRApproved  Stage = "FirstCSRApproved"   // ... and is approved
	StageSecondCSRPending  Stage = "SecondCSRPending"   // the kubelet's serving CSR exists
	StageSecondCSRApproved Stage = "SecondCSRApproved"  // ... and is approved
	StageNodeJoined        Stage = "NodeJoined"         // its Node object exists
	StageNodeReady         Stage = "NodeReady"          // its Node is Ready
)

// Stages lists every stage in order.
var Stages = []Stage{
	StageReachable, StageAssistedServiceUp, StageValidationsPassed, StageInstalling, StageKubeletUp,
	StageFirstCSRPending, StageFirstCSRApproved, StageSecondCSRPending, StageSecondCSRApproved,
	StageNodeJoined, StageNodeReady,
}

// EventType says what an Event reports.
type EventType string

// Event types.
const (
	EventStage      EventType = "stage"      // a stage was reached
	EventStatus     EventType = "status"     // assisted-service host status changed
	EventValidation EventType = "validation" // an assisted-service validation started or stopped failing
	EventProgress   EventType = "progress"   // installation progress changed
	EventCSR        EventType = "csr"        // a CSR was approved, or why not
	EventWarning    EventType = "warning"    // something needs attention
)

// Event is one thing that happened, reported through Options.OnEvent.
type Event struct {
	Time    time.Time `json:"time"`
	Host    string    `json:"host,omitempty"`
	Type    EventType `json:"type"`
	Stage   Stage     `json:"stage,omitempty"`
	CSR     string    `json:"csr,omitempty"`
	Message string    `json:"message"`
}

// Outcome is how the run ended; the CLI maps it to an exit code.
type Outcome string

// Outcomes, from best to worst when several hosts end differently.
const (
	OutcomeAllReady           Outcome = "AllReady"           // every host became a Ready node
	OutcomeTimeout            Outcome = "Timeout"            // time ran out, no specific cause known
	OutcomeValidationsFailing Outcome = "ValidationsFailing" // a host is held back by failing validations
	OutcomeCSRBlocked         Outcome = "CSRBlocked"         // a host waits for a CSR that was not approved
	OutcomeInstallFailed      Outcome = "InstallFailed"      // assisted-service reports a failed installation
	OutcomeInterrupted        Outcome = "Interrupted"        // the run was cancelled
)

// Result is the summary of a run; its JSON form is the command's -o output.
type Result struct {
	Outcome   Outcome      `json:"outcome"`
	StartTime time.Time    `json:"startTime"`
	EndTime   time.Time    `json:"endTime,omitempty"`
	Hosts     []HostResult `json:"hosts"`
	// OtherCSRs are pending kubelet CSRs that claim no host of nodes-config.yaml.
	OtherCSRs []CSRResult `json:"otherCSRs,omitempty"`
}

// HostResult is what is known about one host.
type HostResult struct {
	Host     string      `json:"host"`
	Hostname string      `json:"hostname,omitempty"`
	IPs      []string    `json:"ips"`
	Ready    bool        `json:"ready"`
	Stage    Stage       `json:"stage,omitempty"` // the furthest stage reached
	Stages   []StageTime `json:"stages"`
	// Assisted-service's view, from the host's local REST API.
	AssistedStatus     string       `json:"assistedStatus,omitempty"`
	AssistedStatusInfo string       `json:"assistedStatusInfo,omitempty"`
	FailingValidations []Validation `json:"failingValidations,omitempty"`
	InstallProgress    *Progress    `json:"installProgress,omitempty"`
	Node               string       `json:"node,omitempty"`
	CSRs               []CSRResult  `json:"csrs,omitempty"`
	// Problem says, when the host is not Ready, what holds it back.
	Problem string `json:"problem,omitempty"`
}

// StageTime is when a stage was first observed.
type StageTime struct {
	Stage Stage     `json:"stage"`
	Time  time.Time `json:"time"`
}

// Validation is one assisted-service host validation.
type Validation struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Progress is assisted-service's installation progress of a host.
type Progress struct {
	Stage      string `json:"stage"`
	Percentage int    `json:"percentage,omitempty"`
	Info       string `json:"info,omitempty"`
}

// CSRResult is one CSR the monitor looked at.
type CSRResult struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"` // client, serving or other
	Signer    string `json:"signerName"`
	Requester string `json:"requester"`
	State     string `json:"state"` // Pending, Approved, Denied, Failed
	// Decision is "approved" (by this run), "refused" (rules broken),
	// "would-approve" (all rules hold, --approve-csrs not given),
	// "approval-failed" (all rules hold, the API server refused the approval:
	// RBAC, conflict) or empty for a CSR approved or denied by someone else.
	Decision string   `json:"decision,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
}
