package netem

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// echo starts a server on loopback that sends back what it reads until the
// client half-closes, then closes; it stops when the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestCarriesBytesAndHalfClose(t *testing.T) {
	for _, opts := range []Options{{}, {Delay: 5 * time.Millisecond}, {Delay: time.Millisecond, Rate: 16 << 20}} {
		p := Start(t, echo(t), opts)
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, 3<<20)
		for i := range want {
			want[i] = byte(rand.Uint32())
		}
		go func() {
			c.Write(want)
			c.(*net.TCPConn).CloseWrite()
		}()
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v: echoed %d bytes, not the %d sent", opts, len(got), len(want))
		}
	}
}

// The proxy can never deliver early: a round trip takes at least twice
// the delay, and a capped transfer at least its size over the rate.
func TestNeverEarly(t *testing.T) {
	const delay = 20 * time.Millisecond
	p := Start(t, echo(t), Options{Delay: delay, Rate: 4 << 20})
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.Write([]byte("x"))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 2*delay {
		t.Errorf("round trip %v, shorter than twice the delay %v", rtt, delay)
	}
	start = time.Now()
	go c.Write(make([]byte, 1<<20))
	if _, err := io.ReadFull(c, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("1 MiB at 4 MiB/s took %v, less than 250 ms", d)
	}
}

func TestCloseEndsConnections(t *testing.T) {
	p := Start(t, echo(t), Options{Delay: time.Millisecond})
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("ping"))
	io.ReadFull(c, make([]byte, 4))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a read after Close succeeded")
	}
	if _, err := Listen("127.0.0.1:0", "x", Options{Delay: -1}); err == nil {
		t.Fatal("a negative delay was taken")
	}
}
