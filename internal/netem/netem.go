// Package netem makes a server on loopback look distant: it is a TCP proxy
// that delivers every byte a fixed delay after it was sent, in each
// direction, and caps each connection's bandwidth in each direction. Tests
// and `make bench` put it in front of MinIO (or of internal/faultproxy) to
// see what a mount costs against a bucket 20 ms away, where every request
// is a round trip.
//
// Bytes are read as soon as they arrive and held until their delivery
// time, so a connection pipelines as a real long link does: the delay
// adds to each exchange, not to each buffer. A connection's half-close
// (FIN) and reset reach the other side after the bytes sent before them.
package netem

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Options set what the link costs.
type Options struct {
	// Delay is the one-way delay: a request and its answer take
	// 2*Delay more than they would without the proxy.
	Delay time.Duration
	// Rate caps each connection's bytes per second in each direction;
	// 0 means no cap.
	Rate int64
}

// Proxy is a running proxy.
type Proxy struct {
	// Addr is the proxy's address, 127.0.0.1:PORT: give it to clients
	// instead of the target's.
	Addr string

	target string
	opts   Options
	ln     net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // GUARDED_BY(mu)
	closed bool                  // GUARDED_BY(mu)
	wg     sync.WaitGroup
}

// Listen starts a proxy on addr ("127.0.0.1:0" for any free port) that
// forwards every connection to target (host:port) through a link with
// opts.
func Listen(addr, target string, opts Options) (*Proxy, error) {
	if opts.Delay < 0 || opts.Rate < 0 {
		return nil, fmt.Errorf("netem: negative delay or rate")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netem: %w", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, opts: opts, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Start is Listen on 127.0.0.1 for a test, which fails at once if the
// proxy cannot start, and closes it when the test ends.
func Start(t testing.TB, target string, opts Options) *Proxy {
	t.Helper()
	p, err := Listen("127.0.0.1:0", target, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines to end. Calling it twice is harmless.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// track records c so that Close closes it; false when the proxy is
// closing, in which case c is closed already.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve carries one client connection to a new connection to the target.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(server, client) }()
	go func() { defer wg.Done(); p.pipe(client, server) }()
	wg.Wait()
}

// segment is bytes read from one side, due on the other at due; a nil
// data with err set carries the end of the stream.
type segment struct {
	data []byte
	due  time.Time
	err  error // io.EOF: half-close; anything else: reset
}

// pipe moves bytes from src to dst, each segment delivered Delay after it
// was read and no faster than Rate.
func (p *Proxy) pipe(dst, src net.Conn) {
	// Deep enough that reading never waits for the delay on a fast
	// link: a 10 ms delay at 1 GB/s holds 10 MB in flight.
	q := make(chan segment, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- segment{data: buf[:n], due: time.Now().Add(p.opts.Delay)}
			}
			if err != nil {
				q <- segment{err: err, due: time.Now().Add(p.opts.Delay)}
				return
			}
		}
	}()
	var next time.Time // when the rate cap lets the next byte go
	for s := range q {
		if d := time.Until(s.due); d > 0 {
			time.Sleep(d)
		}
		if s.err != nil {
			if errors.Is(s.err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
					continue
				}
			}
			// A reset or any other failure: end both ways now,
			// with a reset where TCP allows, as the far end did.
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			dst.Close()
			src.Close()
			continue
		}
		if p.opts.Rate > 0 {
			now := time.Now()
			if next.Before(now) {
				next = now
			}
			next = next.Add(time.Duration(float64(len(s.data)) / float64(p.opts.Rate) * float64(time.Second)))
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
		}
		if _, err := dst.Write(s.data); err != nil {
			src.Close()
			dst.Close()
		}
	}
}
