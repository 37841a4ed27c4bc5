package harness

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// FaultyProxy is a TCP proxy on loopback in front of a server (a registry)
// that counts the bytes going each way and can break the network: once
// armed with CutUpAfter or CutDownAfter, it passes that many more bytes in
// that direction, then drops every connection and refuses new ones (they are
// accepted and closed at once) until Restore, like a link that went down.
// DropDownAfter instead drops the connections open at that point and keeps
// taking new ones, like a reset on the path.
type FaultyProxy struct {
	// Addr is HOST:PORT to give clients instead of the server's.
	Addr   string
	target string
	ln     net.Listener

	mu       sync.Mutex
	up, down int64 // bytes client->server and server->client, all connections
	cutUp    int64 // cut when up reaches this (0: never)
	cutDown  int64
	dropDown int64   // drop the open connections when down reaches this (0: never)
	rate     float64 // bytes per second per connection, server to client (0: no cap)
	broken   bool
	cuts     int
	conns    map[net.Conn]struct{}
}

// StartFaultyProxy listens on a free loopback port and forwards to target;
// stopped when t ends.
func StartFaultyProxy(t testing.TB, target string) *FaultyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultyProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.dropAll()
	})
	return p
}

func (p *FaultyProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		broken := p.broken
		p.mu.Unlock()
		if broken {
			c.Close()
			continue
		}
		go p.handle(c)
	}
}

func (p *FaultyProxy) handle(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.broken {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(server, client, true) }()
	go func() { defer wg.Done(); p.pipe(client, server, false) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// pipe copies src to dst, counting; up is the client->server direction.
func (p *FaultyProxy) pipe(dst, src net.Conn, up bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	var start time.Time
	var sent float64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			allowed, cut := p.account(int64(n), up)
			if allowed > 0 {
				if _, werr := dst.Write(buf[:allowed]); werr != nil {
					return
				}
			}
			if rate := p.capDown(); rate > 0 && !up {
				// This connection's bytes so far at rate: wait for the
				// time they take, starting over after an idle spell.
				if start.IsZero() || time.Since(start).Seconds() > sent/rate+0.05 {
					start, sent = time.Now(), 0
				}
				sent += float64(allowed)
				time.Sleep(time.Until(start.Add(time.Duration(sent / rate * float64(time.Second)))))
			}
			if cut {
				p.dropAll()
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			// Half-close: pass the EOF on.
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
	}
}

// account counts n bytes and says how many may pass before a cut.
func (p *FaultyProxy) account(n int64, up bool) (allowed int64, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken {
		return 0, true
	}
	total, limit := &p.down, p.cutDown
	if up {
		total, limit = &p.up, p.cutUp
	}
	allowed = n
	if !up && p.dropDown > 0 && *total+n >= p.dropDown {
		allowed = p.dropDown - *total
		p.cuts++
		p.dropDown = 0
		cut = true
	} else if limit > 0 && *total+n >= limit {
		allowed = limit - *total
		p.broken = true
		p.cuts++
		p.cutUp, p.cutDown = 0, 0
		cut = true
	}
	*total += allowed
	return allowed, cut
}

func (p *FaultyProxy) dropAll() {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// CutUpAfter breaks the network once n more bytes went from clients to the
// server (requests, blob uploads).
func (p *FaultyProxy) CutUpAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutUp = p.up + n
}

// CutDownAfter breaks the network once n more bytes went from the server to
// clients (responses, blob downloads).
func (p *FaultyProxy) CutDownAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutDown = p.down + n
}

// DropDownAfter drops every open connection once n more bytes went from the
// server to clients; new connections are taken as before.
func (p *FaultyProxy) DropDownAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropDown = p.down + n
}

// CapDown limits every connection, server to client, to rate bytes per
// second, like a long path where one TCP stream gets only so much: several
// connections together get more.
func (p *FaultyProxy) CapDown(rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate = rate
}

func (p *FaultyProxy) capDown() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}

// Restore brings the network back.
func (p *FaultyProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.broken = false
}

// Up is the number of bytes clients sent so far; Down what they received.
func (p *FaultyProxy) Up() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up
}

// Down is the number of bytes the server sent to clients so far.
func (p *FaultyProxy) Down() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down
}

// Cuts is how many times the network was broken.
func (p *FaultyProxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}
