package nczarr

import "time"

// HintsGiven waits until the store has been given every read-ahead hint
// queued so far: they are given in the background.
func HintsGiven(d *Dataset) {
	for {
		d.hints.mu.Lock()
		idle := len(d.hints.jobs) == 0 && d.hints.running == 0
		d.hints.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
