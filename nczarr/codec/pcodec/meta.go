package pcodec

import "math"

// numType is a pco number type: its byte in the standalone format, its
// width in bits (also that of its latents) and its kind.
type numType struct {
	code byte
	bits uint // 8, 16, 32 or 64
	kind byte // 'u', 'i' or 'f'
}

// numTypes maps pco's number type bytes to the types.
var numTypes = map[byte]numType{
	1: {1, 32, 'u'}, 2: {2, 64, 'u'}, 3: {3, 32, 'i'}, 4: {4, 64, 'i'},
	5: {5, 32, 'f'}, 6: {6, 64, 'f'}, 7: {7, 16, 'u'}, 8: {8, 16, 'i'},
	9: {9, 16, 'f'}, 10: {10, 8, 'u'}, 11: {11, 8, 'i'},
}

func (t numType) size() int { return int(t.bits / 8) }

// Modes and delta encodings, by their numbers in the format.
const (
	modeClassic    = 0
	modeIntMult    = 1
	modeFloatMult  = 2
	modeFloatQuant = 3
	modeDict       = 4

	deltaNone        = 0
	deltaConsecutive = 1
	deltaLookback    = 2
	deltaConv1       = 3
)

const (
	maxANSBits      = 14
	batchN          = 256 // numbers per batch
	maxChunkN       = 1 << 24
	maxWindowLog    = 24 // log2 of maxChunkN
	maxConv1Quant   = 31
	bitsPerDictSize = 25
)

// chunkMeta is a chunk's metadata: how its numbers split into latent
// variables and how each is coded.
type chunkMeta struct {
	mode     int
	base     uint64   // IntMult's and FloatMult's base, as a latent
	k        uint     // FloatQuant's shift
	dict     []uint64 // Dict's values, as latents
	delta    int
	order    int  // Consecutive's order
	window   uint // Lookback's log2 window size
	stateLog uint // Lookback's log2 state size
	secDelta bool // the secondary latent is delta-coded too
	conv     conv1

	vars [3]*latentVar // delta (lookbacks), primary, secondary; nil when absent
}

// conv1 is the Conv1 delta encoding's predictor.
type conv1 struct {
	quant   uint
	bias    int64
	weights []int64
}

// Indexes into chunkMeta.vars.
const (
	varDelta = iota
	varPrimary
	varSecondary
)

// latentVar is one latent variable's bins and tANS table.
type latentVar struct {
	bits       uint // latent width
	ansLog     uint
	bins       []bin
	stateN     int // delta state latents per page
	lookback   bool
	consec     bool
	conv       bool
	maxOffBits uint

	// tANS decoding table, indexed by state.
	nodes []node
}

type bin struct {
	weight  uint32
	lower   uint64
	offBits uint
}

type node struct {
	lower   uint64 // lower bound of the state's bin
	next    uint32 // base of the next state
	bits    uint8  // bits to read for the next state
	offBits uint8  // offset bits of the state's bin
}

// offBitsWidth is the width of a bin's offset-bit count for w-bit latents.
func offBitsWidth(w uint) uint {
	n := uint(0)
	for ; w != 0; w >>= 1 {
		n++
	}
	return n
}

// readChunkMeta reads a chunk's metadata for number type t in a stream of
// format major version major, ending byte-aligned.
func readChunkMeta(r *bitReader, t numType, major byte) (*chunkMeta, error) {
	m := &chunkMeta{}
	w := t.bits
	m.mode = int(r.read(4))
	switch m.mode {
	case modeClassic:
	case modeIntMult:
		if major == 0 {
			return nil, corrupt("int-mult mode of pco 0.0.0 (its old GCD encoding) is not supported")
		}
		m.base = r.readWide(w)
	case modeFloatMult:
		m.base = r.readWide(w)
	case modeFloatQuant:
		m.k = uint(r.read(8))
	case modeDict:
		n := int(r.read(bitsPerDictSize))
		if err := r.align("dict mode"); err != nil {
			return nil, err
		}
		if n*int(w) > r.remaining() {
			return nil, corrupt("dict of %d values is longer than the data", n)
		}
		m.dict = make([]uint64, n)
		for i := range m.dict {
			m.dict[i] = r.readWide(w)
		}
	default:
		return nil, corrupt("unknown mode %d", m.mode)
	}
	if err := m.checkMode(t); err != nil {
		return nil, err
	}

	if major < 3 {
		// Before format 3 the delta encoding was a consecutive order.
		if m.order = int(r.read(3)); m.order > 0 {
			m.delta = deltaConsecutive
		}
	} else {
		m.delta = int(r.read(4))
		switch m.delta {
		case deltaNone:
		case deltaConsecutive:
			m.order = int(r.read(3))
			if m.order == 0 {
				return nil, corrupt("consecutive delta of order 0")
			}
			m.secDelta = r.read(1) == 1
		case deltaLookback:
			m.window = 1 + uint(r.read(5))
			m.stateLog = uint(r.read(4))
			if m.window > maxWindowLog {
				return nil, corrupt("lookback window 2^%d exceeds 2^%d", m.window, maxWindowLog)
			}
			if m.stateLog > m.window {
				return nil, corrupt("lookback state 2^%d exceeds its window 2^%d", m.stateLog, m.window)
			}
			m.secDelta = r.read(1) == 1
		case deltaConv1:
			m.conv.quant = uint(r.read(5))
			m.conv.bias = int64(r.readWide(64) ^ 1<<63)
			n := 1 + int(r.read(5))
			m.conv.weights = make([]int64, n)
			for i := range m.conv.weights {
				m.conv.weights[i] = int64(int32(uint32(r.read(32)) ^ 1<<31))
			}
		default:
			return nil, corrupt("unknown delta encoding %d", m.delta)
		}
	}

	if m.delta == deltaLookback {
		v, err := readLatentVar(r, 32)
		if err != nil {
			return nil, err
		}
		m.vars[varDelta] = v
	}
	pw := w
	if m.mode == modeDict {
		pw = 32
	}
	var err error
	if m.vars[varPrimary], err = readLatentVar(r, pw); err != nil {
		return nil, err
	}
	if m.mode == modeIntMult || m.mode == modeFloatMult || m.mode == modeFloatQuant {
		if m.vars[varSecondary], err = readLatentVar(r, w); err != nil {
			return nil, err
		}
	}
	if err := r.align("chunk metadata"); err != nil {
		return nil, err
	}
	if err := m.checkDelta(); err != nil {
		return nil, err
	}
	for i, v := range m.vars {
		if v == nil {
			continue
		}
		switch {
		case i == varDelta:
		case m.delta == deltaConsecutive && (i == varPrimary || m.secDelta):
			v.consec, v.stateN = true, m.order
		case m.delta == deltaLookback && (i == varPrimary || m.secDelta):
			v.lookback, v.stateN = true, 1<<m.stateLog
		case m.delta == deltaConv1 && i == varPrimary:
			v.conv, v.stateN = true, len(m.conv.weights)
		}
		if err := v.buildTable(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkMode checks that the mode suits the number type.
func (m *chunkMeta) checkMode(t numType) error {
	switch m.mode {
	case modeIntMult:
		if t.kind == 'f' {
			return corrupt("int-mult mode for a float type")
		}
		if m.base == 0 {
			return corrupt("int-mult mode with base 0")
		}
	case modeFloatMult:
		if t.kind != 'f' {
			return corrupt("float-mult mode for an integer type")
		}
		b := toFloat64(t, fromOrdered(t, m.base))
		if math.IsInf(b, 0) || math.IsNaN(b) || b == 0 {
			return corrupt("float-mult mode with base %v", b)
		}
	case modeFloatQuant:
		if t.kind != 'f' {
			return corrupt("float-quant mode for an integer type")
		}
		if m.k == 0 || m.k > mantissaBits(t) {
			return corrupt("float-quant mode with k=%d", m.k)
		}
	}
	return nil
}

// checkDelta checks the delta encoding against the latent variables.
func (m *chunkMeta) checkDelta() error {
	switch m.delta {
	case deltaLookback:
		window := uint64(1) << m.window
		for _, b := range m.vars[varDelta].bins {
			if b.lower < 1 || b.lower > window {
				return corrupt("lookback bin lower bound %d outside [1, %d]", b.lower, window)
			}
		}
	case deltaConv1:
		l := m.vars[varPrimary].bits
		if l > 32 {
			return corrupt("conv1 delta encoding on 64-bit latents")
		}
		convBits := 2 * l
		if l == 32 {
			convBits = 64
		}
		if m.conv.quant > min(maxConv1Quant, convBits-1) {
			return corrupt("conv1 quantization %d too large", m.conv.quant)
		}
		sum := 0.0
		for _, w := range m.conv.weights {
			sum += math.Abs(float64(w))
		}
		if math.Abs(float64(m.conv.bias))+math.Ldexp(sum, int(l)) >= math.Ldexp(1, int(convBits)-1) {
			return corrupt("conv1 weights and bias can overflow")
		}
	}
	return nil
}

// readLatentVar reads one latent variable's tANS size and bins.
func readLatentVar(r *bitReader, w uint) (*latentVar, error) {
	v := &latentVar{bits: w, ansLog: uint(r.read(4))}
	n := int(r.read(15))
	if v.ansLog > maxANSBits {
		return nil, corrupt("tANS size log %d exceeds %d", v.ansLog, maxANSBits)
	}
	if n > 1<<v.ansLog {
		return nil, corrupt("%d bins do not fit a tANS table of 2^%d", n, v.ansLog)
	}
	if n == 1 && v.ansLog > 0 {
		return nil, corrupt("one bin with tANS size log %d", v.ansLog)
	}
	obw := offBitsWidth(w)
	if n*int(v.ansLog+w+obw) > r.remaining() {
		return nil, corrupt("%d bins are longer than the data", n)
	}
	v.bins = make([]bin, n)
	for i := range v.bins {
		b := &v.bins[i]
		b.weight = uint32(r.read(v.ansLog)) + 1
		b.lower = r.readWide(w)
		b.offBits = uint(r.read(obw))
		if b.offBits > w {
			return nil, corrupt("bin of %d offset bits for %d-bit latents", b.offBits, w)
		}
		v.maxOffBits = max(v.maxOffBits, b.offBits)
	}
	return v, nil
}

// buildTable spreads the bins over the tANS table the way pco does, and
// derives each state's successor base and bit count.
func (v *latentVar) buildTable() error {
	weights := make([]uint32, max(len(v.bins), 1))
	weights[0] = 1 // no bins: one state of an empty bin
	total := uint64(0)
	for i, b := range v.bins {
		weights[i] = b.weight
	}
	for _, w := range weights {
		total += uint64(w)
	}
	size := uint32(1) << v.ansLog
	if total != uint64(size) {
		return corrupt("bin weights sum to %d, not the tANS size %d", total, size)
	}
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
	v.nodes = make([]node, size)
	x := append([]uint32(nil), weights...)
	for state, s := range symbols {
		xs := x[s]
		x[s]++
		bits := uint32(0)
		for xs<<bits < size {
			bits++
		}
		nd := node{next: xs<<bits - size, bits: uint8(bits)}
		if int(s) < len(v.bins) {
			nd.offBits = uint8(v.bins[s].offBits)
			nd.lower = v.bins[s].lower
		}
		v.nodes[state] = nd
	}
	return nil
}
