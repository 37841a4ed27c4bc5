// Package fakehost plays a new host booted from the add-nodes ISO, for tests of
// `add-nodes monitor`: its local assisted-service REST API (responses checked
// against the swagger spec: the real one in ../shared/fixtures when present,
// else the own subset beside it), its kubelet port, and its
// kubelet's CSRs and Node, created in the real API server as the identities a
// real kubelet uses.
package fakehost

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BasePath is where assisted-service serves its v2 API.
const BasePath = "/api/assisted-install/v2"

// Validation is one entry of a host's validations_info.
type Validation struct {
	ID      string `json:"id"`
	Status  string `json:"status"` // success, failure, pending, error, disabled
	Message string `json:"message"`
}

// Host is the host record the fake serves; the zero value means "not
// registered yet".
type Host struct {
	Status            string
	StatusInfo        string
	RequestedHostname string
	// Validations by category (network, hardware, operators, ...).
	Validations map[string][]Validation
	// Progress: current stage ("" for none), percentage, info.
	Stage      string
	Percentage int
	Info       string
}

// Assisted is a fake of a host's local assisted-service (REST mode, add-nodes
// workflow): one imported cluster (kind AddHostsCluster), one infra-env and at
// most one host, behind the watcherAuth header. Every response it sends is
// validated against the swagger spec and a violation fails the test.
type Assisted struct {
	t     testing.TB
	Addr  string
	Token string

	mu         sync.Mutex
	host       *Host
	clusterID  string
	infraEnvID string
	hostID     string
	created    string
	hits       map[string]int
	denied     int
	ln         net.Listener
	srv        *http.Server
}

// StartAssisted serves the fake on addr (for example 127.x.y.z:8090) until the
// test ends or Stop is called. token is what Watcher-Authorization must carry.
func StartAssisted(t testing.TB, addr, token string) *Assisted {
	t.Helper()
	if _, err := LoadSwagger(); err != nil {
		t.Fatalf("fake assisted-service: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// Only a listener on all addresses takes this port on a fresh
			// loopback address: another assisted-service, most likely.
			t.Fatalf("fake assisted-service: listen %s: %v: another process listens on this port on all addresses (see ss -ltnp); the monitor reaches hosts on it, so stop that process", addr, err)
		}
		t.Fatalf("fake assisted-service: listen %s: %v", addr, err)
	}
	a := &Assisted{
		t: t, Addr: ln.Addr().String(), Token: token, ln: ln, hits: map[string]int{},
		clusterID: uuid(), infraEnvID: uuid(), hostID: uuid(),
		created: time.Now().UTC().Format(time.RFC3339),
	}
	a.srv = &http.Server{Handler: http.HandlerFunc(a.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	t.Cleanup(a.Stop)
	return a
}

// Update changes the host record under the lock; it registers the host first
// when needed.
func (a *Assisted) Update(f func(h *Host)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.host == nil {
		a.host = &Host{Status: "discovering"}
	}
	f(a.host)
}

// Stop closes the API, as the host's reboot into the installed system does.
func (a *Assisted) Stop() { _ = a.srv.Close() }

// Hits is how many requests reached path (below BasePath) with a valid token.
func (a *Assisted) Hits(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[path]
}

// Denied is how many requests came without the right token.
func (a *Assisted) Denied() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.denied
}

func (a *Assisted) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, BasePath)
	if r.Method != http.MethodGet || path == r.URL.Path {
		a.reply(w, http.StatusNotFound, "error", map[string]any{"kind": "Error", "id": 404, "href": r.URL.Path, "code": "404", "reason": "not found"})
		return
	}
	if r.Header.Get("Watcher-Authorization") != a.Token || a.Token == "" {
		a.denied++
		a.reply(w, http.StatusUnauthorized, "infra_error", map[string]any{"code": 401, "message": "Unauthorized"})
		return
	}
	a.hits[path]++
	switch {
	case path == "/infra-envs":
		a.reply(w, http.StatusOK, "infra-env-list", []any{a.infraEnv()})
	case path == "/clusters":
		a.reply(w, http.StatusOK, "cluster-list", []any{a.cluster(false)})
	case path == "/clusters/"+a.clusterID:
		a.reply(w, http.StatusOK, "cluster", a.cluster(true))
	default:
		a.reply(w, http.StatusNotFound, "error", map[string]any{"kind": "Error", "id": 404, "href": r.URL.Path, "code": "404", "reason": "no such resource"})
	}
}

func (a *Assisted) reply(w http.ResponseWriter, code int, definition string, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		a.t.Errorf("fake assisted-service: %v", err)
		return
	}
	var generic any
	_ = json.Unmarshal(b, &generic)
	s, _ := LoadSwagger()
	if errs := s.Validate(definition, generic); len(errs) > 0 {
		a.t.Errorf("fake assisted-service: response does not follow the swagger spec:\n  %s", strings.Join(errs, "\n  "))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func (a *Assisted) infraEnv() map[string]any {
	return map[string]any{
		"kind": "InfraEnv", "id": a.infraEnvID, "href": BasePath + "/infra-envs/" + a.infraEnvID,
		"name": "cluster0-infraenv", "type": "full-iso", "cluster_id": a.clusterID,
		"created_at": a.created, "updated_at": a.created,
	}
}

func (a *Assisted) cluster(withHosts bool) map[string]any {
	c := map[string]any{
		"kind": "AddHostsCluster", "id": a.clusterID, "href": BasePath + "/clusters/" + a.clusterID,
		"name": "ostest", "image_info": map[string]any{}, "status": "adding-hosts",
		"status_info": "cluster is adding hosts to existing OCP cluster", "api_vip_dns_name": "api.ostest.test.metalkube.org",
		"imported": true,
	}
	if withHosts {
		hosts := []any{}
		if a.host != nil {
			hosts = append(hosts, a.hostJSON())
		}
		c["hosts"] = hosts
	}
	return c
}

func (a *Assisted) hostJSON() map[string]any {
	h := a.host
	m := map[string]any{
		"kind": "AddToExistingClusterHost", "id": a.hostID, "href": BasePath + "/infra-envs/" + a.infraEnvID + "/hosts/" + a.hostID,
		"cluster_id": a.clusterID, "infra_env_id": a.infraEnvID,
		"status": h.Status, "status_info": h.StatusInfo, "role": "worker",
		"requested_hostname": h.RequestedHostname,
	}
	if h.Validations != nil {
		b, _ := json.Marshal(h.Validations)
		m["validations_info"] = string(b)
	}
	if h.Stage != "" {
		p := map[string]any{"current_stage": h.Stage, "installation_percentage": h.Percentage}
		if h.Info != "" {
			p["progress_info"] = h.Info
		}
		m["progress"] = p
	}
	return m
}

func uuid() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// LoopbackIP returns a random address in 127.0.0.0/8 (other than 127.0.0.1),
// so each fake host has its own IP and can use the real ports (8090, 10250).
func LoopbackIP() net.IP {
	n := func(lo, hi int64) byte {
		v, _ := rand.Int(rand.Reader, big.NewInt(hi-lo+1))
		return byte(v.Int64() + lo)
	}
	return net.IPv4(127, n(1, 254), n(0, 255), n(2, 254))
}

// ListenKubelet opens the kubelet port (10250) on ip: it accepts connections
// and closes them, which is all the monitor checks.
func ListenKubelet(t testing.TB, ip net.IP) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "10250"))
	if err != nil {
		t.Fatalf("fake kubelet: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err == nil {
				_ = c.Close()
			}
		}
	}()
}
