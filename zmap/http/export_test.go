package http

import "time"

// SetProbeClock makes s's probes expire by now, after window.
func SetProbeClock(s *Store, now func() time.Time, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now, s.window = now, window
}

// Probes returns the arrays whose probes s keeps.
func Probes(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.probes)
}
