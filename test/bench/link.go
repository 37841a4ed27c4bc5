package main

import (
	"io"
	"net"
	"sync"
	"time"
)

// slowLink is a TCP proxy that makes a long path out of loopback: every
// byte arrives delay after it was sent, each way, and each connection moves
// at most rate bytes per second each way with at most window bytes in
// flight, as one TCP stream over a long path does. Several connections
// together get more, as they do on such a path.
type slowLink struct {
	ln     net.Listener
	target string
	delay  time.Duration
	rate   float64
	window int
	wg     sync.WaitGroup
}

const linkPiece = 64 << 10

func startSlowLink(target string, delay time.Duration, rate float64, window int) (*slowLink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &slowLink{ln: ln, target: target, delay: delay, rate: rate, window: window}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

func (l *slowLink) addr() string { return l.ln.Addr().String() }

func (l *slowLink) close() {
	l.ln.Close()
	l.wg.Wait()
}

func (l *slowLink) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer c.Close()
			s, err := net.Dial("tcp", l.target)
			if err != nil {
				return
			}
			defer s.Close()
			done := make(chan struct{})
			go func() {
				l.pipe(s, c)
				close(done)
			}()
			l.pipe(c, s)
			<-done
		}()
	}
}

type linkPacket struct {
	b    []byte
	sent time.Time
}

// pipe carries src to dst through the delay line until src ends.
func (l *slowLink) pipe(dst, src net.Conn) {
	line := make(chan linkPacket, max(1, l.window/linkPiece))
	go func() {
		defer close(line)
		for {
			b := make([]byte, linkPiece)
			n, err := src.Read(b)
			if n > 0 {
				line <- linkPacket{b[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	var start time.Time
	var moved float64
	for p := range line {
		time.Sleep(time.Until(p.sent.Add(l.delay)))
		// The connection's bytes at rate, counted from the end of its last
		// idle spell.
		if start.IsZero() || time.Since(start).Seconds() > moved/l.rate+0.05 {
			start, moved = time.Now(), 0
		}
		moved += float64(len(p.b))
		time.Sleep(time.Until(start.Add(time.Duration(moved / l.rate * float64(time.Second)))))
		if _, err := dst.Write(p.b); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, src)
}
