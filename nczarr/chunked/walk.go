package chunked

// A walk is a reader stepping through an array by a fixed stride: a time
// series at one point read by one pread per time step (down axis 0), a
// column, every k-th row, a window moved along one axis, in either
// direction. Its reads leave gaps, so the sequential read-ahead, which
// loads chunks in storage order, loads chunks the walk never reads and
// not far enough along the walk; a walk's read-ahead instead loads the
// chunks the next steps of the walk will touch.
//
// A walk is told by the offsets of the reads: the reads repeat with
// period p (1 for one read per step) when every read is the read p
// before it moved by one stride S, with the same length. A constant step
// in the array's element coordinates is a constant step in the decoded
// bytes, so the walk is found on byte offsets, whatever its axis.

// Walk read-ahead tuning.
const (
	// maxPeriod is the most reads one step of a walk may take (the rows
	// of a window read one by one).
	maxPeriod = 16
	// minWalkWindow is the chunks a walk loads ahead of its reads when it
	// is found; the window doubles whenever a read waited for a chunk.
	minWalkWindow = 8
	// maxWalkScan bounds the steps one read predicts, so that a read
	// never spends long on a walk whose chunks hold many steps.
	maxWalkScan = 4096
)

// span is one read: n bytes at off.
type span struct{ off, n int64 }

// walk is a Reader's view of its reads as a walk, and the chunks it
// loads ahead of one. Its owner guards it.
type walk struct {
	hist  [2*maxPeriod + 1]span // the last reads, hist[reads%len(hist)] next
	reads int64                 // reads seen

	period int    // reads per step; 0 when no walk is followed
	stride int64  // bytes the walk moves each step
	base   []span // the step the walk was found at: step j is base moved j strides
	found  int64  // reads when the walk was found
	next   int64  // the first step whose chunks were not yet predicted
	end    bool   // the walk leaves the array at step next
	window int    // chunks to keep loaded ahead of the current step
	// chunks are the chunks predicted and not yet passed, by ordinal: the
	// first and the last step that touch them.
	chunks map[int64]walkSteps
}

type walkSteps struct{ first, last int64 }

// at is the read i reads back (0: the last one).
func (w *walk) at(i int) span {
	return w.hist[(w.reads-1-int64(i))%int64(len(w.hist))]
}

// observe records a read and reports whether it continues the walk being
// followed, or starts one.
func (w *walk) observe(off, n int64) bool {
	w.hist[w.reads%int64(len(w.hist))] = span{off, n}
	w.reads++
	if w.period > 0 {
		if w.continues(w.period, w.stride) {
			return true
		}
		w.stop()
	}
	for p := 1; p <= maxPeriod && int64(2*p+1) <= w.reads; p++ {
		s := w.at(0).off - w.at(p).off
		if s == 0 || !w.continues(p, s) {
			continue
		}
		for m := 1; m <= p; m++ {
			if !w.continuesAt(m, p, s) {
				s = 0
				break
			}
		}
		if s == 0 || contiguous(w, p, s) {
			continue
		}
		w.period, w.stride, w.found = p, s, w.reads
		w.base = make([]span, p)
		for k := range p {
			w.base[k] = w.at(p - 1 - k)
		}
		w.next, w.end, w.window = 1, false, minWalkWindow
		w.chunks = map[int64]walkSteps{}
		return true
	}
	return false
}

// continues reports whether the last read is the read p before it moved
// by s.
func (w *walk) continues(p int, s int64) bool { return w.continuesAt(0, p, s) }

func (w *walk) continuesAt(m, p int, s int64) bool {
	a, b := w.at(m), w.at(m+p)
	return a.n == b.n && a.off-b.off == s
}

// contiguous reports whether the reads of one step of period p and
// stride s cover the bytes they move over: a sequential reader (whose
// concurrent reads may even repeat with a period), not a walk.
func contiguous(w *walk, p int, s int64) bool {
	if s < 0 {
		return false
	}
	var n int64
	for m := range p {
		n += w.at(m).n
	}
	return s <= n
}

// stop forgets the walk: its loads already queued still run.
func (w *walk) stop() {
	w.period, w.base, w.chunks = 0, nil, nil
}

// step is the step of the walk the last read belongs to.
func (w *walk) step() int64 {
	return (w.reads - w.found + int64(w.period) - 1) / int64(w.period)
}

// plan moves the walk's read-ahead along for the last read: it returns
// the chunks to load, in the order the walk will need them, so that
// window chunks are loaded past the current step, and the chunks the walk
// has passed, which the cache may reuse first. limit bounds the chunks
// predicted and not yet passed.
func (w *walk) plan(a *Array, g chunkGrid, limit int) (launch, passed []int64) {
	now := w.step()
	for o, s := range w.chunks {
		if s.last < now-1 {
			passed = append(passed, o)
			delete(w.chunks, o)
		}
	}
	ahead := 0
	for _, s := range w.chunks {
		if s.first > now {
			ahead++
		}
	}
	window := min(w.window, limit)
	w.next = max(w.next, now+1)
	for scanned := 0; !w.end && ahead < window && len(w.chunks) < limit && scanned < maxWalkScan; scanned++ {
		j := w.next
		for _, b := range w.base {
			off := b.off + j*w.stride
			if off < 0 || off+b.n > a.size {
				w.end = true
				break
			}
			g.ordinals(a, off, off+b.n, func(o int64) {
				s, ok := w.chunks[o]
				if !ok {
					s.first = j
					launch = append(launch, o)
					if j > now {
						ahead++
					}
				}
				s.last = j
				w.chunks[o] = s
			})
		}
		if !w.end {
			w.next++
		}
	}
	return launch, passed
}

// ordinals calls fn with the ordinal of each chunk that the decoded bytes
// [off, end) touch, in the order a read of them first touches them
// (a chunk may come more than once).
func (g chunkGrid) ordinals(a *Array, off, end int64, fn func(int64)) {
	is := int64(a.ItemSize)
	shape, chunks := a.Meta.Shape, a.Meta.Chunks
	rank := len(shape)
	last := int64(-1)
	for e, e1 := off/is, (end+is-1)/is; e < e1; {
		rem, o, mul := e, int64(0), int64(1)
		run := e1 - e
		for d := rank - 1; d >= 0; d-- {
			i := rem % shape[d]
			rem /= shape[d]
			o += i / chunks[d] * mul
			mul *= g.dims[d]
			if d == rank-1 {
				run = min(run, chunks[d]-i%chunks[d], shape[d]-i)
			}
		}
		if o != last {
			fn(o)
			last = o
		}
		e += max(run, 1)
	}
}
