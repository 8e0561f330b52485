package chunked

import "testing"

// TestWalkObserve feeds the walk detector sequences of reads and checks
// from which read on it follows a walk to the end, of which period and
// stride. (The rows of a window's first step are a walk of period 1 until
// the next step's first row breaks it.)
func TestWalkObserve(t *testing.T) {
	const MiB = 1 << 20
	type read struct{ off, n int64 }
	series := func(base, stride int64, n int, lens ...int64) (out []read) {
		for i := range n {
			for k, l := range lens {
				out = append(out, read{base + int64(i)*stride + int64(k)*1000, l})
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		reads  []read
		found  int // reads from which on the last walk is followed; 0: never
		period int
		stride int64
	}{
		{"down axis 0", series(37*4, 256*256*4, 10, 4), 3, 1, 256 * 256 * 4},
		{"backwards", series(9000*4, -4096*4, 10, 4), 3, 1, -4096 * 4},
		{"every 5th row", series(0, 5*1024, 10, 1024), 3, 1, 5 * 1024},
		{"window of 3 rows", series(0, 64*1024, 10, 36, 36, 36), 7, 3, 64 * 1024},
		{"contiguous", series(0, 4, 20, 4), 0, 0, 0},
		{"sequential in 1 MiB reads", series(0, MiB, 20, MiB), 0, 0, 0},
		{"sequential, pairs swapped", []read{{0, MiB}, {2 * MiB, MiB}, {MiB, MiB}, {3 * MiB, MiB}, {4 * MiB, MiB},
			{6 * MiB, MiB}, {5 * MiB, MiB}, {7 * MiB, MiB}, {8 * MiB, MiB}, {10 * MiB, MiB}, {9 * MiB, MiB}}, 0, 0, 0},
		{"lengths differ", []read{{0, 4}, {100, 8}, {200, 12}, {300, 16}, {400, 20}, {500, 24}}, 0, 0, 0},
		{"lengths alternate", []read{{0, 4}, {100, 8}, {200, 4}, {300, 8}, {400, 4}}, 5, 2, 200},
		{"the same read again", series(400, 0, 5, 4), 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w walk
			type state struct {
				period int
				stride int64
			}
			var seen []state
			for _, r := range tc.reads {
				w.observe(r.off, r.n)
				seen = append(seen, state{w.period, w.stride})
			}
			found := 0
			for i := len(seen); i > 0 && seen[i-1] == seen[len(seen)-1] && seen[i-1].period > 0; i-- {
				found = i
			}
			if found != tc.found || w.period != tc.period || w.stride != tc.stride {
				t.Errorf("found after %d reads, period %d, stride %d; want %d, %d, %d",
					found, w.period, w.stride, tc.found, tc.period, tc.stride)
			}
		})
	}
}

// TestWalkBreaks checks that a read off the walk stops it, and that the
// detector then finds a new walk from the reads that follow.
func TestWalkBreaks(t *testing.T) {
	var w walk
	for i := range int64(5) {
		w.observe(i*4096, 4)
	}
	if w.period != 1 {
		t.Fatal("no walk found")
	}
	if w.observe(77777, 4) || w.period != 0 || w.chunks != nil {
		t.Fatalf("a read off the walk did not stop it: period %d", w.period)
	}
	for i := range int64(3) {
		if on := w.observe(1<<20-i*512, 4); on != (i == 2) {
			t.Fatalf("read %d of the new walk: following %v", i, on)
		}
	}
	if w.stride != -512 {
		t.Errorf("new walk's stride %d, want -512", w.stride)
	}
}
