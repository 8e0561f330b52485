package main

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
)

// logging is the mount's one log: slog in text or JSON, to stderr or a
// file. go-fuse's messages (every request under --debug) go through the
// standard log package, which is pointed at the same handler so that
// they come out in the same format.
type logging struct {
	logger *slog.Logger
	out    *swapWriter
	file   *os.File // nil when logging to stderr
}

func newLogging(file, format string, debug bool) (*logging, error) {
	l := &logging{out: &swapWriter{w: os.Stderr}}
	if file != "" {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, fmt.Errorf("--log-file: %w", err)
		}
		l.file = f
		l.out.w = f
	}
	level, fuseLevel := slog.LevelInfo, slog.LevelWarn
	if debug {
		level, fuseLevel = slog.LevelDebug, slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(l.out, opts)
	} else {
		h = slog.NewTextHandler(l.out, opts)
	}
	l.logger = slog.New(h)
	log.SetFlags(0)
	log.SetOutput(slog.NewLogLogger(h, fuseLevel).Writer())
	return l, nil
}

// detachStderr stops writing to stderr, for a daemon whose parent is
// gone: without --log-file the log is then discarded.
func (l *logging) detachStderr() {
	if l.file == nil {
		l.out.set(io.Discard)
	}
}

func (l *logging) close() {
	if l.file != nil {
		l.out.set(io.Discard)
		l.file.Close()
	}
}

// swapWriter is an io.Writer whose destination can change while in use.
type swapWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *swapWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *swapWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}
