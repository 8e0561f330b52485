package chunked

import "time"

// HintsGiven waits until the store has been given every read-ahead hint
// of a's source queued so far: they are given in the background.
func HintsGiven(a *Array) {
	q := a.src.hints
	for {
		q.mu.Lock()
		idle := len(q.jobs) == 0 && q.running == 0
		q.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Settled waits until a's source has run every read-ahead load queued so
// far: they run in the background.
func Settled(a *Array) {
	q := a.src.ahead
	for {
		q.mu.Lock()
		idle := len(q.jobs) == 0 && q.running == 0
		q.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
