package monitor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/day2/csr"
)

// Defaults of Options.
const (
	DefaultTimeout      = 90 * time.Minute
	DefaultPollInterval = 5 * time.Second
	DefaultAssistedPort = 8090
	DefaultKubeletPort  = 10250
	DefaultServingGrace = 2 * time.Minute
)

// Options are the inputs of Run.
type Options struct {
	Hosts []Host
	// Kube reads Nodes and CSRs, and approves CSRs when ApproveCSRs is set.
	Kube kubernetes.Interface
	// AuthToken is sent to each host's assisted-service in the
	// Watcher-Authorization header; see ReadAuthToken.
	AuthToken   string
	ApproveCSRs bool
	Timeout     time.Duration
	// PollInterval is the time between two rounds of checks.
	PollInterval time.Duration
	AssistedPort int
	KubeletPort  int
	// ServingGrace is how long, with ApproveCSRs, a Ready host may wait for its
	// serving CSR before the monitor stops waiting for it.
	ServingGrace time.Duration
	HTTPClient   *http.Client
	// OnEvent receives every event, in order, from one goroutine.
	OnEvent func(Event)
	// OnPoll receives a snapshot after every round (for live views).
	OnPoll func(*Result)
}

// hostState is everything the monitor knows about one host.
type hostState struct {
	Host
	reached     map[Stage]time.Time
	learnedName string // from assisted-service or the Node, when nodes-config has none

	apiDone    bool   // the host rebooted: its assisted-service is gone
	apiErr     string // last error of its assisted-service API
	authWarned bool

	status, statusInfo string
	validations        map[string]Validation
	progress           *Progress

	node           string
	ready          bool
	readyAt        time.Time
	csrs           map[string]*CSRResult
	csrOrder       []string
	lastCSRMessage map[string]string
}

func (h *hostState) name() string {
	if h.Hostname != "" {
		return h.Hostname
	}
	return h.learnedName
}

type monitor struct {
	o            Options
	hosts        []*hostState
	strict       []csr.Host // nodes-config hostnames only: what approval trusts
	other        map[string]*CSRResult
	lastOtherMsg map[string]string
	lastKubeErr  string
	approvedByUs map[string]bool
	assisted     *assistedClient
	start        time.Time
}

// Run follows the hosts until all are Ready, the timeout passes or ctx ends.
// Problems talking to hosts or to the API server are reported as events and
// retried; Run returns an error only for invalid options.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Hosts) == 0 {
		return nil, errors.New("no hosts to monitor")
	}
	if o.Kube == nil {
		return nil, errors.New("no Kubernetes client")
	}
	setDefaults(&o)
	m := &monitor{
		o: o, other: map[string]*CSRResult{}, lastOtherMsg: map[string]string{},
		approvedByUs: map[string]bool{}, start: time.Now(),
		assisted: &assistedClient{http: o.HTTPClient, token: o.AuthToken},
	}
	for _, h := range o.Hosts {
		m.hosts = append(m.hosts, &hostState{
			Host: h, reached: map[Stage]time.Time{}, validations: map[string]Validation{},
			csrs: map[string]*CSRResult{}, lastCSRMessage: map[string]string{},
		})
		m.strict = append(m.strict, csr.Host{Hostname: h.Hostname, IPs: h.IPs})
	}
	for _, h := range m.hosts {
		if len(h.IPs) == 0 {
			m.emit(h, EventWarning, "", "", "no IP known for this host (its networkConfig has no static address): only its CSRs and Node are followed; give its IP with --ip-addresses")
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(runCtx, o.PollInterval, true, func(ctx context.Context) (bool, error) {
		m.round(ctx)
		if o.OnPoll != nil {
			o.OnPoll(m.snapshot(""))
		}
		return m.allDone(), nil
	})
	switch {
	case err == nil:
		return m.finish(OutcomeAllReady), nil
	case ctx.Err() != nil:
		return m.finish(OutcomeInterrupted), nil
	}
	return m.finish(m.classify()), nil
}

func setDefaults(o *Options) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.AssistedPort == 0 {
		o.AssistedPort = DefaultAssistedPort
	}
	if o.KubeletPort == 0 {
		o.KubeletPort = DefaultKubeletPort
	}
	if o.ServingGrace <= 0 {
		o.ServingGrace = DefaultServingGrace
	}
	if o.HTTPClient == nil {
		// The host's API is plain HTTP on its own IP: no proxy may see the token.
		o.HTTPClient = &http.Client{Transport: &http.Transport{Proxy: nil}}
	}
	if o.OnEvent == nil {
		o.OnEvent = func(Event) {}
	}
}

// probe is what one round learned about one host by talking to it.
type probe struct {
	reachIP   net.IP
	polledAPI bool
	report    *hostReport
	apiErr    error
	kubeletIP net.IP
}

// round runs one check of every host (in parallel) and of the cluster, then
// applies the results in host order so events come out deterministic.
func (m *monitor) round(ctx context.Context) {
	dialTimeout := min(2*time.Second, m.o.PollInterval)
	probes := make([]probe, len(m.hosts))
	var wg sync.WaitGroup
	for i, h := range m.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &probes[i]
			if _, ok := h.reached[StageReachable]; !ok {
				p.reachIP, _ = reachable(ctx, h.IPs, []int{m.o.AssistedPort, 22, m.o.KubeletPort}, dialTimeout)
			}
			if !h.apiDone {
				p.polledAPI = true
				p.report, p.apiErr = m.assisted.read(ctx, h.IPs, m.o.AssistedPort, h.Hostname)
			}
			if _, ok := h.reached[StageKubeletUp]; !ok {
				p.kubeletIP, _ = kubeletUp(ctx, h.IPs, m.o.KubeletPort, dialTimeout)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // the run is over; errors now say nothing about the hosts
	}
	for i, h := range m.hosts {
		m.applyProbe(h, probes[i])
	}
	m.pollCluster(ctx)
}

func (m *monitor) emit(h *hostState, t EventType, stage Stage, csrName, format string, a ...any) {
	e := Event{Time: time.Now(), Type: t, Stage: stage, CSR: csrName, Message: fmt.Sprintf(format, a...)}
	if h != nil {
		e.Host = h.Label
	}
	m.o.OnEvent(e)
}

// reach records a stage the first time it is seen.
func (m *monitor) reach(h *hostState, s Stage, format string, a ...any) {
	if _, ok := h.reached[s]; ok {
		return
	}
	h.reached[s] = time.Now()
	m.emit(h, EventStage, s, "", format, a...)
}

func (m *monitor) applyProbe(h *hostState, p probe) {
	if p.reachIP != nil {
		m.reach(h, StageReachable, "host answers on %s", p.reachIP)
	}
	if p.polledAPI {
		m.applyAssisted(h, p.report, p.apiErr)
	}
	if p.kubeletIP != nil {
		m.reach(h, StageReachable, "host answers on %s", p.kubeletIP)
		m.reach(h, StageKubeletUp, "kubelet port %d accepts connections on %s", m.o.KubeletPort, p.kubeletIP)
		h.apiDone = true
	}
}

func (m *monitor) allDone() bool {
	for _, h := range m.hosts {
		if !m.done(h) {
			return false
		}
	}
	return true
}

// done: the Node is Ready and, when approving, the serving CSR was approved
// too (or the grace period for it has passed).
func (m *monitor) done(h *hostState) bool {
	if !h.ready {
		return false
	}
	if !m.o.ApproveCSRs {
		return true
	}
	if _, ok := h.reached[StageSecondCSRApproved]; ok {
		return true
	}
	return time.Since(h.readyAt) >= m.o.ServingGrace
}
