// Package faultproxy is a fault-injecting HTTP proxy for tests: it stands
// between an S3 client and a real S3 server (MinIO, see internal/miniotest)
// on 127.0.0.1 and, on demand, answers a request with an error status,
// resets the connection before the reply or in the middle of the body, cuts
// a body short of its length, or stalls in the middle of a body. Faults are
// injected per request key, or at random into a share of all requests; and
// it throttles as S3 does, answering 503 SlowDown to the requests above a
// rate.
//
// The proxy forwards requests unchanged, keeping the Host header the client
// signed, so SigV4 signatures stay valid; clients must use path-style
// addressing.
package faultproxy

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Kind is how a fault breaks a request.
type Kind int

const (
	// Answer answers with Fault.Status (and an S3 error document when
	// Fault.Code is set) instead of forwarding the request.
	Answer Kind = iota
	// ResetBeforeReply resets the connection (TCP RST) without answering.
	ResetBeforeReply
	// ResetMidBody forwards the request, sends the server's status, its
	// headers and part of the body, then resets the connection.
	ResetMidBody
	// CutBody sends the server's headers, Content-Length included, and
	// part of the body, then closes the connection cleanly (FIN).
	CutBody
	// CutBodyNoLength is CutBody without a Content-Length: the body is
	// delimited by the end of the connection, as HTTP/1.0 servers and
	// some proxies send it.
	CutBodyNoLength
	// StallMidBody sends the headers and part of the body, then sends
	// nothing more until the client closes the connection or the proxy
	// is closed.
	StallMidBody
)

var kindNames = [...]string{"answer", "reset before reply", "reset mid-body", "body cut short", "body cut short, no Content-Length", "stall mid-body"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Fault is one way to break a request.
type Fault struct {
	Kind Kind
	// Status, Code and Message make the answer of an Answer fault: the
	// HTTP status and the S3 error code and message of the XML body. An
	// empty Code sends no body (what a load balancer in front of S3 sends
	// with a 502 or 504).
	Status  int
	Code    string
	Message string
}

func (f Fault) String() string {
	if f.Kind == Answer {
		return fmt.Sprintf("answer %d %s", f.Status, f.Code)
	}
	return f.Kind.String()
}

// rule injects a fault into the requests for one key, or for every key
// with a prefix.
type rule struct {
	Fault
	left int // answers still to inject; negative: until lifted
}

// random injects one of its faults into a share of all requests.
type random struct {
	rate   float64
	faults []Fault
	rng    *rand.Rand
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	// URL is the proxy's base URL, http://127.0.0.1:PORT: the endpoint
	// to give clients instead of the server's.
	URL string

	target  *url.URL
	tr      *http.Transport
	rp      *httputil.ReverseProxy
	srv     *httptest.Server
	closing chan struct{}

	mu        sync.Mutex
	rules     map[string]*rule      // GUARDED_BY(mu); a key ending in "*" is a prefix
	random    *random               // GUARDED_BY(mu); nil: no random faults
	bucket    *tokenBucket          // GUARDED_BY(mu); nil: no throttling
	throttled int                   // GUARDED_BY(mu); SlowDown answers of the bucket
	counts    map[string]int        // GUARDED_BY(mu); requests seen per key
	injected  map[Kind]int          // GUARDED_BY(mu); faults injected per kind
	conns     map[net.Conn]struct{} // GUARDED_BY(mu); hijacked connections
	closed    bool                  // GUARDED_BY(mu)
}

// Start starts a proxy on 127.0.0.1 in front of the server at target (a
// base URL such as http://127.0.0.1:9000) and closes it when t ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("faultproxy: target %q: %v", target, err)
	}
	// No transparent gzip: the proxy passes bodies byte for byte.
	tr := &http.Transport{DisableCompression: true}
	p := &Proxy{
		target:   u,
		tr:       tr,
		closing:  make(chan struct{}),
		rules:    make(map[string]*rule),
		counts:   make(map[string]int),
		injected: make(map[Kind]int),
		conns:    make(map[net.Conn]struct{}),
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			// The client signed the Host it sent (the proxy's);
			// the server checks the signature against the Host it
			// receives.
			pr.Out.Host = pr.In.Host
		},
		Transport: tr,
		// Clients that give up mid-body are what these tests cause.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewServer(p)
	p.URL = p.srv.URL
	t.Cleanup(p.Close)
	return p
}

// Close stops the proxy: stalled requests end, their connections are
// closed. Start registers it with t.Cleanup; calling it twice is harmless.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.closing)
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.srv.Close()
	p.tr.CloseIdleConnections()
}

// Key returns the key of a path-style S3 request: the object key
// ("ds/v/0") for object requests, "list:" and the prefix ("list:ds/v/")
// for ListObjectsV2, "" for requests on the bucket itself. For Azure Blob
// Storage's path-style requests (/ACCOUNT/CONTAINER/BLOB, as Azurite
// takes them) the key is CONTAINER/BLOB, and List Blobs is "list:" and
// the prefix.
func Key(r *http.Request) string {
	_, obj, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	if obj == "" && q.Has("list-type") || q.Get("restype") == "container" && q.Get("comp") == "list" {
		return "list:" + q.Get("prefix")
	}
	return obj
}

// Inject makes the proxy break the next n requests for key with f; a
// negative n, every request until Lift. A key ending in "*" matches every
// key with the prefix before it ("ds/v/*"; "*" matches all). An exact key
// wins over a prefix, a longer prefix over a shorter one.
func (p *Proxy) Inject(key string, f Fault, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules[key] = &rule{Fault: f, left: n}
}

// Lift removes the rule Inject set for key.
func (p *Proxy) Lift(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.rules, key)
}

// InjectRandom breaks each request with probability rate, with one of
// faults drawn at random, from a generator seeded with seed; rules set by
// Inject take precedence. A zero rate stops it.
func (p *Proxy) InjectRandom(rate float64, faults []Fault, seed uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rate <= 0 || len(faults) == 0 {
		p.random = nil
		return
	}
	p.random = &random{rate: rate, faults: faults, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Throttle answers 503 SlowDown to every request above rate requests a
// second, as S3 does to a prefix past its rate: a token bucket of rate
// tokens a second, holding at most a tenth of a second's worth, from
// which each request takes one, and which a request that finds it empty
// does not drain. Throttling comes before every other fault. A zero rate
// stops it.
func (p *Proxy) Throttle(rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rate <= 0 {
		p.bucket = nil
		return
	}
	burst := max(1, rate/10)
	p.bucket = &tokenBucket{rate: rate, burst: burst, tokens: burst, last: time.Now()}
}

// Throttled returns how many requests Throttle answered with SlowDown.
func (p *Proxy) Throttled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.throttled
}

// tokenBucket admits rate requests a second, burst at once.
type tokenBucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// take reports whether a request may pass now, and takes its token.
func (b *tokenBucket) take() bool {
	now := time.Now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Count returns how many requests for key the proxy has seen, broken ones
// included.
func (p *Proxy) Count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[key]
}

// Requests returns how many requests the proxy has seen in all.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.counts {
		n += c
	}
	return n
}

// Injected returns how many faults of each kind the proxy has injected.
func (p *Proxy) Injected() map[Kind]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[Kind]int, len(p.injected))
	for k, n := range p.injected {
		m[k] = n
	}
	return m
}

// pick counts the request and returns the fault to inject, if any.
func (p *Proxy) pick(key string) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[key]++
	if p.bucket != nil && !p.bucket.take() {
		p.throttled++
		p.injected[Answer]++
		return SlowDown, true
	}
	ru := p.rules[key]
	if ru == nil {
		best := -1
		for pat, r := range p.rules {
			prefix, ok := strings.CutSuffix(pat, "*")
			if ok && strings.HasPrefix(key, prefix) && len(prefix) > best {
				ru, best = r, len(prefix)
			}
		}
	}
	var f Fault
	switch {
	case ru != nil && ru.left != 0:
		if ru.left > 0 {
			ru.left--
		}
		f = ru.Fault
	case ru == nil && p.random != nil && p.random.rng.Float64() < p.random.rate:
		f = p.random.faults[p.random.rng.IntN(len(p.random.faults))]
	default:
		return Fault{}, false
	}
	p.injected[f.Kind]++
	return f, true
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, ok := p.pick(Key(r))
	switch {
	case !ok:
		p.rp.ServeHTTP(w, r)
	case f.Kind == Answer:
		writeS3Error(w, r, f)
	case f.Kind == ResetBeforeReply:
		if conn := p.hijack(w); conn != nil {
			reset(conn)
			p.release(conn)
		}
	default:
		p.breakBody(w, r, f.Kind)
	}
}

// hijack takes over the client's connection; nil when the proxy is
// closing or the connection cannot be taken.
func (p *Proxy) hijack(w http.ResponseWriter) net.Conn {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "faultproxy: cannot hijack", http.StatusInternalServerError)
		return nil
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		conn.Close()
		return nil
	}
	p.conns[conn] = struct{}{}
	return conn
}

func (p *Proxy) release(conn net.Conn) {
	conn.Close()
	p.mu.Lock()
	delete(p.conns, conn)
	p.mu.Unlock()
}

// reset closes conn with a TCP RST instead of a FIN.
func reset(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// breakBody forwards r to the server, then sends the client the answer's
// status line, headers and half of its body, and breaks the rest as kind
// says. An answer with less than two bytes of body cannot be broken in the
// middle: its connection is reset before the reply.
func (p *Proxy) breakBody(w http.ResponseWriter, r *http.Request, kind Kind) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme = p.target.Scheme
	out.URL.Host = p.target.Host
	out.Host = r.Host // what the client signed
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	conn := p.hijack(w)
	if conn == nil {
		return
	}
	defer p.release(conn)
	if len(body) < 2 {
		reset(conn)
		return
	}
	h := resp.Header.Clone()
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Connection"} {
		h.Del(k)
	}
	if kind == CutBodyNoLength {
		h.Set("Connection", "close")
	} else {
		h.Set("Content-Length", fmt.Sprint(len(body)))
	}
	bw := bufio.NewWriter(conn)
	fmt.Fprintf(bw, "HTTP/1.1 %03d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	h.Write(bw)
	bw.WriteString("\r\n")
	bw.Write(body[:len(body)/2])
	if err := bw.Flush(); err != nil {
		return
	}
	switch kind {
	case ResetMidBody:
		reset(conn)
	case StallMidBody:
		// Wait for the client to give up (its read of the connection
		// ends) or for the proxy to close.
		gone := make(chan struct{})
		go func() {
			io.Copy(io.Discard, conn)
			close(gone)
		}()
		select {
		case <-gone:
		case <-p.closing:
		}
	}
	// CutBody and CutBodyNoLength: the deferred release closes cleanly.
}

// s3Error is the XML body of an S3 error answer.
type s3Error struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string
	Message   string
	Resource  string
	RequestID string `xml:"RequestId"`
}

// writeS3Error answers r with f as S3 would: an XML error document, or no
// body at all when f has no code.
func writeS3Error(w http.ResponseWriter, r *http.Request, f Fault) {
	w.Header().Set("X-Amz-Request-Id", "faultproxy")
	if f.Code != "" {
		// Where Azure Blob Storage puts the code (its SDK reads it
		// there first); S3 clients ignore it.
		w.Header().Set("X-Ms-Error-Code", f.Code)
	}
	if f.Code == "" {
		w.WriteHeader(f.Status)
		return
	}
	body, err := xml.Marshal(s3Error{Code: f.Code, Message: f.Message, Resource: r.URL.Path, RequestID: "faultproxy"})
	if err != nil {
		panic(err) // a fixed struct always marshals
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(f.Status)
	io.WriteString(w, xml.Header)
	w.Write(body) // a HEAD answer drops the body, as S3's does
}

// Faults S3 and the load balancers in front of it send.
var (
	SlowDown       = Fault{Status: http.StatusServiceUnavailable, Code: "SlowDown", Message: "Please reduce your request rate."}
	InternalError  = Fault{Status: http.StatusInternalServerError, Code: "InternalError", Message: "We encountered an internal error. Please try again."}
	TooMany        = Fault{Status: http.StatusTooManyRequests, Code: "TooManyRequests", Message: "Too many requests, please slow down."}
	Bare429        = Fault{Status: http.StatusTooManyRequests}
	BadGateway     = Fault{Status: http.StatusBadGateway}
	GatewayTimeout = Fault{Status: http.StatusGatewayTimeout}
	AccessDenied   = Fault{Status: http.StatusForbidden, Code: "AccessDenied", Message: "Access Denied."}
	NoSuchKey      = Fault{Status: http.StatusNotFound, Code: "NoSuchKey", Message: "The specified key does not exist."}
	// ServerBusy is how Azure Blob Storage throttles.
	ServerBusy = Fault{Status: http.StatusServiceUnavailable, Code: "ServerBusy", Message: "The server is busy."}
)
