package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// body is what the backend serves for every object.
var body = bytes.Repeat([]byte("0123456789"), 1000)

// start runs a backend that serves body for every GET (as a ranged S3
// object server would for a whole object) behind a proxy.
func start(t *testing.T) (*Proxy, *http.Client) {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"x"`)
		w.Write(body)
	}))
	t.Cleanup(backend.Close)
	p := Start(t, backend.URL)
	// Fresh connections: net/http silently retries a GET that fails
	// before its answer on a reused one.
	tr := &http.Transport{DisableCompression: true, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return p, &http.Client{Transport: tr, Timeout: 2 * time.Second}
}

// get fetches key through the proxy and returns the status, the body read
// and the error of the request or of reading the body.
func get(c *http.Client, p *Proxy, key string) (int, []byte, error) {
	resp, err := c.Get(p.URL + "/bucket/" + key)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func TestFaults(t *testing.T) {
	p, c := start(t)
	half := body[:len(body)/2]
	for _, tc := range []struct {
		fault    Fault
		status   int    // 0: no answer
		got      []byte // body read before the error
		errMatch string // "" : no error
	}{
		{SlowDown, 503, nil, ""},
		{BadGateway, 502, []byte{}, ""},
		{Fault{Kind: ResetBeforeReply}, 0, nil, "connection reset"},
		{Fault{Kind: ResetMidBody}, 200, half, "connection reset"},
		{Fault{Kind: CutBody}, 200, half, "unexpected EOF"},
		// Without a length the client cannot tell: that is the point.
		{Fault{Kind: CutBodyNoLength}, 200, half, ""},
		{Fault{Kind: StallMidBody}, 200, half, "Client.Timeout"},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			key := strings.ReplaceAll(tc.fault.String(), " ", "-")
			p.Inject(key, tc.fault, 1)
			status, got, err := get(c, p, key)
			if status != tc.status {
				t.Errorf("status %d, want %d", status, tc.status)
			}
			switch {
			case tc.errMatch == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.errMatch != "" && (err == nil || !strings.Contains(err.Error(), tc.errMatch)):
				t.Errorf("error %v, want one containing %q", err, tc.errMatch)
			}
			if tc.got != nil && !bytes.Equal(got, tc.got) {
				t.Errorf("read %d bytes before the fault, want %d", len(got), len(tc.got))
			}
			// The rule was for one request: the next one passes.
			if status, got, err := get(c, p, key); status != 200 || err != nil || !bytes.Equal(got, body) {
				t.Errorf("after the fault: %d, %d bytes, %v", status, len(got), err)
			}
			if n := p.Count(key); n != 2 {
				t.Errorf("Count = %d, want 2", n)
			}
		})
	}
}

func TestRules(t *testing.T) {
	p, c := start(t)
	p.Inject("ds/*", SlowDown, -1)
	p.Inject("ds/v/*", InternalError, -1)
	p.Inject("ds/v/keep", NoSuchKey, 2)
	for _, tc := range []struct {
		key  string
		want []int
	}{
		{"ds/a", []int{503, 503}},
		{"ds/v/0", []int{500, 500}},
		{"ds/v/keep", []int{404, 404, 200}}, // an exhausted exact rule hides the prefixes
		{"other", []int{200}},
	} {
		for i, want := range tc.want {
			if status, _, err := get(c, p, tc.key); status != want || err != nil {
				t.Errorf("%s request %d: %d, %v; want %d", tc.key, i+1, status, err, want)
			}
		}
	}
	p.Lift("ds/v/*")
	if status, _, _ := get(c, p, "ds/v/0"); status != 503 {
		t.Errorf("after lifting ds/v/*: ds/v/0 answered %d, want ds/*'s 503", status)
	}
	if got := p.Injected()[Answer]; got != 7 {
		t.Errorf("Injected()[Answer] = %d, want 7", got)
	}
}

// TestRandom checks that a random rule breaks about its share of the
// requests, that a seed replays the same choices, and that rate 0 stops it.
func TestRandom(t *testing.T) {
	p, c := start(t)
	run := func() []int {
		p.InjectRandom(0.1, []Fault{SlowDown, BadGateway}, 42)
		var statuses []int
		for range 400 {
			status, _, err := get(c, p, "r")
			if err != nil {
				t.Fatal(err)
			}
			statuses = append(statuses, status)
		}
		return statuses
	}
	first, second := run(), run()
	if !equal(first, second) {
		t.Error("the same seed broke different requests")
	}
	broken := 0
	for _, s := range first {
		if s != 200 {
			broken++
		}
	}
	// 400 draws at 10%: 40 expected; [15, 70] is far beyond 4 sigma.
	if broken < 15 || broken > 70 {
		t.Errorf("%d of 400 requests broken at rate 0.1", broken)
	}
	p.InjectRandom(0, nil, 0)
	for range 50 {
		if status, _, err := get(c, p, "r"); status != 200 || err != nil {
			t.Fatalf("after InjectRandom(0): %d, %v", status, err)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCloseEndsStall checks that closing the proxy ends a stalled body.
// The proxy is closed once the answer's headers have come, so that the
// stall, not the request, is what it ends.
func TestCloseEndsStall(t *testing.T) {
	p, _ := start(t)
	p.Inject("s", Fault{Kind: StallMidBody}, -1)
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}} // no timeout
	resp, err := c.Get(p.URL + "/bucket/s")
	if err != nil {
		t.Fatalf("the stalled answer did not begin: %v", err)
	}
	defer resp.Body.Close()
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	p.Close()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("stalled read ended with %v, want unexpected EOF", err)
		}
	case <-time.After(30 * time.Second): // a hang, not a speed check
		t.Fatal("the stalled read did not end when the proxy closed")
	}
}

// TestThrottle sends requests faster than the throttling rate: the
// requests above it are answered 503 SlowDown, those within it (the burst,
// and what the rate refills while they run) pass, and once the sender
// slows down, requests pass again.
func TestThrottle(t *testing.T) {
	p, c := start(t)
	const rate = 200 // requests a second; a burst of 20
	p.Throttle(rate)
	start := time.Now()
	passed, slowed := 0, 0
	for range 200 {
		status, b, err := get(c, p, "t")
		switch {
		case err != nil:
			t.Fatal(err)
		case status == 200:
			passed++
		case status == 503 && bytes.Contains(b, []byte("<Code>SlowDown</Code>")):
			slowed++
		default:
			t.Fatalf("answer %d %q, want 200 or 503 SlowDown", status, b)
		}
	}
	elapsed := time.Since(start).Seconds()
	// The bucket's bound on what passes: its burst plus the refill.
	if most := 20 + int(elapsed*rate) + 1; passed > most || passed < 20 {
		t.Errorf("%d of 200 requests passed in %.3f s; want the burst of 20, and at most %d", passed, elapsed, most)
	}
	if slowed == 0 || p.Throttled() != slowed || p.Injected()[Answer] != slowed {
		t.Errorf("%d answers were SlowDown; Throttled() = %d, Injected()[Answer] = %d", slowed, p.Throttled(), p.Injected()[Answer])
	}
	// A sender within the rate is not throttled.
	time.Sleep(100 * time.Millisecond)
	for range 10 {
		if status, _, err := get(c, p, "t"); status != 200 || err != nil {
			t.Fatalf("after a pause, at a slow pace: %d, %v", status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Throttle(0)
	for range 50 {
		if status, _, err := get(c, p, "t"); status != 200 || err != nil {
			t.Fatalf("after Throttle(0): %d, %v", status, err)
		}
	}
	t.Logf("%d requests passed, %d throttled in %.3f s", passed, slowed, elapsed)
}
