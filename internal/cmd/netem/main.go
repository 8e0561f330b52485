// Command netem runs internal/netem's proxy outside a test, for `make
// bench`: it forwards every connection on -listen to -target through a link
// with a one-way -delay and a per-connection -rate, prints its address on
// one line, and serves until SIGINT or SIGTERM.
//
//	go run ./internal/cmd/netem -target 127.0.0.1:9000 -delay 10ms
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nczarrfs/nczarrfs/internal/netem"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	target := flag.String("target", "", "host:port to forward to (required)")
	delay := flag.Duration("delay", 0, "one-way delay (a round trip costs twice this)")
	rate := flag.Int64("rate", 0, "bytes per second per connection and direction; 0: no cap")
	flag.Parse()
	if *target == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: netem -target HOST:PORT [-listen ADDR] [-delay D] [-rate BYTES]")
		os.Exit(2)
	}
	p, err := netem.Listen(*listen, *target, netem.Options{Delay: *delay, Rate: *rate})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(p.Addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	p.Close()
}
