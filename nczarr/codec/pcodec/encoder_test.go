package pcodec

import (
	"math"
	"math/bits"
	"slices"
)

// A minimal pco standalone encoder, for tests only. It writes the format
// as docs/format.md of the pcodec repository describes it, with bins and
// tANS tables chosen simply (equal-count bins, weights by count), so that
// the tests can make streams of every number type, mode, delta encoding,
// chunk count and bin count without pcodec installed. It shares the
// decoder's reading of the format: it checks the decoder's consistency,
// and the reference fixtures (TestReferenceFixtures) check its
// correctness.

// encChunk describes one chunk to encode.
type encChunk struct {
	typ  numType
	nums []uint64 // the numbers' bits (low typ.bits bits)

	mode int
	base uint64 // IntMult: the integer base; FloatMult: the float base's bits
	k    uint   // FloatQuant

	delta     int
	order     int      // Consecutive
	secDelta  bool     // Consecutive and Lookback: delta-code the secondary
	windowLog uint     // Lookback
	stateLog  uint     // Lookback
	lookbacks []uint64 // Lookback: one per number past the state

	conv conv1 // Conv1: its predictor (latents of at most 32 bits)

	bins int // most bins per latent variable (at least 1)
}

type bitWriter struct {
	b    []byte
	nbit uint
}

func (w *bitWriter) write(v uint64, n uint) {
	for i := uint(0); i < n; i++ {
		if w.nbit%8 == 0 {
			w.b = append(w.b, 0)
		}
		if v>>i&1 != 0 {
			w.b[len(w.b)-1] |= 1 << (w.nbit % 8)
		}
		w.nbit++
	}
}

func (w *bitWriter) align() { w.nbit = (w.nbit + 7) &^ 7 }

func (w *bitWriter) bytes(p ...byte) {
	w.align()
	w.b = append(w.b, p...)
	w.nbit += 8 * uint(len(p))
}

// encodeStandalone writes a standalone stream (version 3, format 4.1) of
// the chunks; uniform is the uniform number type byte or 0.
func encodeStandalone(uniform byte, chunks ...encChunk) []byte {
	w := &bitWriter{}
	w.bytes('p', 'c', 'o', '!', 3, uniform)
	total := 0
	for _, c := range chunks {
		total += len(c.nums)
	}
	w.write(63, 6) // count hint in 64 bits
	w.write(uint64(total), 64)
	w.align()
	w.bytes(4, 1)
	for _, c := range chunks {
		w.bytes(c.typ.code)
		w.write(uint64(len(c.nums)-1), 24)
		encodeChunk(w, c)
		w.align()
	}
	w.bytes(0)
	return w.b
}

// encVar is one latent variable being encoded.
type encVar struct {
	bits    uint
	latents []uint64 // what the page sends (deltas, after the delta state)
	state   []uint64 // delta state
	stateN  int
	ansLog  uint
	bins    []bin
	binOf   []int    // bin of each latent
	ansBits []uint64 // tANS bits of each latent, in the order read
	ansN    []uint8
	initial [4]uint32
}

func encodeChunk(w *bitWriter, c encChunk) {
	t := c.typ
	wd := t.bits
	n := len(c.nums)
	// Split the numbers into latents by the mode.
	primary := make([]uint64, n)
	var secondary, dict []uint64
	for i, x := range c.nums {
		primary[i] = toLatent(t, x)
	}
	switch c.mode {
	case modeIntMult:
		secondary = make([]uint64, n)
		for i, l := range primary {
			primary[i], secondary[i] = l/c.base, l%c.base
		}
	case modeFloatMult:
		secondary = make([]uint64, n)
		base := toFloat64(t, c.base)
		for i, x := range c.nums {
			f := toFloat64(t, x)
			mult := math.Round(f / base)
			primary[i] = intFloatLatent(t, mult)
			approx := floatBits(t, mult*base)
			if t.bits == 32 {
				approx = uint64(math.Float32bits(float32(mult) * float32(base)))
			}
			secondary[i] = (toOrdered(t, x) - toOrdered(t, approx) + mid(wd)) & mask(wd)
		}
	case modeFloatQuant:
		secondary = make([]uint64, n)
		low := uint64(1)<<c.k - 1
		for i, l := range primary {
			primary[i] = l >> c.k
			if l >= mid(wd) {
				secondary[i] = l & low
			} else {
				secondary[i] = low - l&low
			}
		}
	case modeDict:
		// The dict is the distinct latents, sorted; the primary latents
		// are indexes into it.
		dict = slices.Clone(primary)
		slices.Sort(dict)
		dict = slices.Compact(dict)
		for i, l := range primary {
			primary[i] = uint64(slices.Index(dict, l))
		}
	}

	// Header: mode, delta encoding.
	w.write(uint64(c.mode), 4)
	switch c.mode {
	case modeIntMult:
		w.write(c.base, wd)
	case modeFloatMult:
		w.write(toOrdered(t, c.base), wd)
	case modeFloatQuant:
		w.write(uint64(c.k), 8)
	case modeDict:
		w.write(uint64(len(dict)), bitsPerDictSize)
		w.align()
		for _, d := range dict {
			w.write(d, wd)
		}
	}
	w.write(uint64(c.delta), 4)
	switch c.delta {
	case deltaConsecutive:
		w.write(uint64(c.order), 3)
		w.write(b2u(c.secDelta), 1)
	case deltaLookback:
		w.write(uint64(c.windowLog-1), 5)
		w.write(uint64(c.stateLog), 4)
		w.write(b2u(c.secDelta), 1)
	case deltaConv1:
		w.write(uint64(c.conv.quant), 5)
		w.write(uint64(c.conv.bias)^1<<63, 64)
		w.write(uint64(len(c.conv.weights)-1), 5)
		for _, wt := range c.conv.weights {
			w.write(uint64(uint32(int32(wt))^1<<31), 32)
		}
	}

	var vars []*encVar
	if c.delta == deltaLookback {
		vars = append(vars, &encVar{bits: 32, latents: c.lookbacks})
	}
	pw := wd
	if c.mode == modeDict {
		pw = 32
	}
	vars = append(vars, deltaEncode(c, primary, pw, true))
	if secondary != nil {
		vars = append(vars, deltaEncode(c, secondary, wd, c.secDelta))
	}
	for _, v := range vars {
		v.chooseBins(c.bins)
		w.write(uint64(v.ansLog), 4)
		w.write(uint64(len(v.bins)), 15)
		for _, b := range v.bins {
			w.write(uint64(b.weight-1), v.ansLog)
			w.write(b.lower, v.bits)
			w.write(uint64(b.offBits), offBitsWidth(v.bits))
		}
		v.ansEncode()
	}
	w.align()

	// Page: delta states and tANS states, then the batches.
	for _, v := range vars {
		for _, s := range v.state {
			w.write(s, v.bits)
		}
		for _, s := range v.initial {
			w.write(uint64(s), v.ansLog)
		}
	}
	w.align()
	primaryStateN := vars[len(vars)-1-b2i(secondary != nil)].stateN
	next := make([]int, len(vars))
	for start := 0; start < n; start += batchN {
		left := n - start
		for i, v := range vars {
			var k int
			if c.delta == deltaLookback && i == 0 {
				k = min(max(left-primaryStateN, 0), min(left, batchN))
			} else {
				k = min(max(left-v.stateN, 0), batchN)
			}
			from := next[i]
			for j := from; j < from+k; j++ {
				w.write(v.ansBits[j], uint(v.ansN[j]))
			}
			for j := from; j < from+k; j++ {
				b := v.bins[v.binOf[j]]
				w.write(v.latents[j]-b.lower, b.offBits)
			}
			next[i] += k
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func b2i(b bool) int { return int(b2u(b)) }

// toLatent is fromOrdered's inverse.
func toLatent(t numType, x uint64) uint64 {
	switch t.kind {
	case 'i':
		return (x ^ mid(t.bits)) & mask(t.bits)
	case 'f':
		return toOrdered(t, x)
	}
	return x & mask(t.bits)
}

// intFloatLatent is intFloat's inverse for floats of integer value.
func intFloatLatent(t numType, f float64) uint64 {
	abs := uint64(math.Abs(f))
	if math.Signbit(f) {
		return mid(t.bits) - 1 - abs
	}
	return mid(t.bits) + abs
}

// deltaEncode applies the chunk's delta encoding to latents (when delta)
// and returns the variable to send.
func deltaEncode(c encChunk, l []uint64, w uint, delta bool) *encVar {
	v := &encVar{bits: w}
	l = slices.Clone(l)
	m := mask(w)
	switch {
	case delta && c.delta == deltaConsecutive:
		for range c.order {
			if len(l) == 0 {
				v.state = append(v.state, 0)
				continue
			}
			v.state = append(v.state, l[0])
			for i := len(l) - 1; i > 0; i-- {
				l[i] = (l[i] - l[i-1]) & m
			}
			l = l[1:]
		}
		v.stateN = c.order
	case delta && c.delta == deltaLookback:
		stateN := 1 << c.stateLog
		real := min(len(l), stateN)
		for i := len(l) - 1; i >= stateN; i-- {
			if j := i - int(c.lookbacks[i-stateN]); j >= 0 {
				l[i] = (l[i] - l[j]) & m
			}
		}
		v.state = make([]uint64, stateN)
		copy(v.state[stateN-real:], l[:real])
		l = l[real:]
		v.stateN = stateN
	case delta && c.delta == deltaConv1:
		// Residuals from the prediction of the order latents before.
		order := len(c.conv.weights)
		v.state = slices.Clone(l[:order])
		res := make([]uint64, 0, len(l)-order)
		for i := order; i < len(l); i++ {
			s := c.conv.bias
			for j, wt := range c.conv.weights {
				s += wt * int64(l[i-order+j])
			}
			res = append(res, l[i]-uint64(max(s, 0)>>c.conv.quant))
		}
		l = res
		v.stateN = order
	default:
		v.latents = l
		return v
	}
	for i := range l {
		l[i] = (l[i] + mid(w)) & m
	}
	v.latents = l
	return v
}

// chooseBins splits the latents into at most most bins of equal counts.
func (v *encVar) chooseBins(most int) {
	if len(v.latents) == 0 {
		v.ansLog = 0
		return
	}
	sorted := slices.Clone(v.latents)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	nb := min(most, len(sorted))
	for i := 0; i < nb; i++ {
		lo := sorted[i*len(sorted)/nb]
		hi := sorted[(i+1)*len(sorted)/nb-1]
		v.bins = append(v.bins, bin{lower: lo, offBits: uint(bits.Len64(hi - lo))})
	}
	v.binOf = make([]int, len(v.latents))
	counts := make([]int, len(v.bins))
	for i, l := range v.latents {
		b, _ := slices.BinarySearchFunc(v.bins, l, func(b bin, l uint64) int {
			if b.lower > l {
				return 1
			}
			return -1
		})
		v.binOf[i] = b - 1
		counts[b-1]++
	}
	if len(v.bins) == 1 {
		v.bins[0].weight = 1
		return
	}
	v.ansLog = min(uint(bits.Len(uint(4*len(v.bins)))), maxANSBits)
	size := 1 << v.ansLog
	sum := 0
	for i := range v.bins {
		wt := max(1, counts[i]*size/len(v.latents))
		v.bins[i].weight = uint32(wt)
		sum += wt
	}
	// Fix the sum on the heaviest bins.
	for sum != size {
		h := 0
		for i, b := range v.bins {
			if b.weight > v.bins[h].weight {
				h = i
			}
		}
		if sum > size {
			d := min(sum-size, int(v.bins[h].weight)-1)
			v.bins[h].weight -= uint32(d)
			sum -= d
		} else {
			v.bins[h].weight += uint32(size - sum)
			sum = size
		}
	}
}

// ansEncode codes the latents' bins with the decoder's tANS table, each
// of the four interleaved lanes backwards from state 0.
func (v *encVar) ansEncode() {
	lv := &latentVar{bits: v.bits, ansLog: v.ansLog, bins: v.bins}
	if err := lv.buildTable(); err != nil {
		panic(err)
	}
	size := uint32(1) << v.ansLog
	// state of each (bin, x) pair, x in [weight, 2*weight)
	stateOf := make([]map[uint32]uint32, max(len(v.bins), 1))
	for i := range stateOf {
		stateOf[i] = map[uint32]uint32{}
	}
	weights := make([]uint32, len(stateOf))
	for i := range weights {
		weights[i] = 1
		if i < len(v.bins) {
			weights[i] = v.bins[i].weight
		}
	}
	x := slices.Clone(weights)
	// Recover each state's symbol from the table as buildTable spread it.
	symbols := spread(weights, size)
	for s, sym := range symbols {
		stateOf[sym][x[sym]] = uint32(s)
		x[sym]++
	}
	n := len(v.latents)
	v.ansBits = make([]uint64, n)
	v.ansN = make([]uint8, n)
	if len(v.bins) <= 1 {
		return
	}
	for lane := 0; lane < 4; lane++ {
		state := uint32(0)
		if n <= lane {
			continue
		}
		last := lane + (n-1-lane)/4*4
		for i := last; i >= lane; i -= 4 {
			b := uint32(v.binOf[i])
			X := state + size
			nb := uint8(0)
			for X>>nb >= 2*weights[b] {
				nb++
			}
			v.ansBits[i] = uint64(X & (1<<nb - 1))
			v.ansN[i] = nb
			state = stateOf[b][X>>nb]
		}
		v.initial[lane] = state
	}
}

// spread is buildTable's spreading of symbols over the table.
func spread(weights []uint32, size uint32) []uint32 {
	symbols := make([]uint32, size)
	stride := 3 * size / 5
	if stride%2 == 0 {
		stride++
	}
	step := uint32(0)
	for s, w := range weights {
		for range w {
			symbols[(stride*step)&(size-1)] = uint32(s)
			step++
		}
	}
	return symbols
}
