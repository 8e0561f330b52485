package pcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
)

// Number type bytes.
var (
	tU16, tU32, tU64 = numTypes[7], numTypes[1], numTypes[2]
	tI16, tI32, tI64 = numTypes[8], numTypes[3], numTypes[4]
	tF16, tF32, tF64 = numTypes[9], numTypes[5], numTypes[6]
	tU8, tI8         = numTypes[10], numTypes[11]
	allTypes         = []numType{tU8, tI8, tU16, tI16, tF16, tU32, tI32, tF32, tU64, tI64, tF64}
)

// numBytes is the numbers' little-endian bytes, what decoding must give.
func numBytes(t numType, nums []uint64) []byte {
	var b []byte
	for _, x := range nums {
		switch t.bits {
		case 8:
			b = append(b, byte(x))
		case 16:
			b = binary.LittleEndian.AppendUint16(b, uint16(x))
		case 32:
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		default:
			b = binary.LittleEndian.AppendUint64(b, x)
		}
	}
	return b
}

// floatOf returns the bits of f in type t.
func floatOf(t numType, f float64) uint64 { return floatBits(t, f) }

// genNums makes n numbers of type t suited to mode: a noisy random walk
// for integers and classic floats, near multiples of a base for the mult
// modes, floats with k low zero bits (mostly) for float-quant.
func genNums(rng *rand.Rand, t numType, mode int, base uint64, k uint, n int) []uint64 {
	nums := make([]uint64, n)
	walk := rng.Float64() * 1000
	for i := range nums {
		walk += rng.NormFloat64() * 10
		switch {
		case mode == modeIntMult:
			adj := uint64(0)
			if rng.IntN(10) == 0 {
				adj = rng.Uint64N(base)
			}
			nums[i] = fromOrdered(t, (uint64(math.Abs(walk))*base+adj)&mask(t.bits))
		case t.kind != 'f':
			x := uint64(int64(walk))
			if rng.IntN(50) == 0 {
				x = rng.Uint64() // outliers across the whole range
			}
			nums[i] = x & mask(t.bits)
		case mode == modeFloatMult:
			b := toFloat64(t, base)
			mult := math.Round(walk)
			if t.bits == 16 {
				mult = math.Mod(mult, 1000)
			}
			nums[i] = floatOf(t, mult*b)
			if t.bits == 32 {
				nums[i] = uint64(math.Float32bits(float32(mult) * float32(b)))
			}
			if rng.IntN(20) == 0 {
				nums[i] ^= 1 // off the multiple by an ulp
			}
		case mode == modeFloatQuant:
			x := floatOf(t, walk/7)
			if rng.IntN(20) != 0 {
				x &^= 1<<k - 1
			}
			nums[i] = x
		default:
			x := floatOf(t, walk/3)
			switch rng.IntN(100) {
			case 0:
				x = rng.Uint64() & mask(t.bits) // any bits: NaNs, infinities, subnormals
			case 1:
				x = floatOf(t, math.Copysign(0, -1))
			}
			nums[i] = x
		}
	}
	return nums
}

type rtCase struct {
	name   string
	chunks []encChunk
}

func (c rtCase) want() []byte {
	var b []byte
	for _, ch := range c.chunks {
		b = append(b, numBytes(ch.typ, ch.nums)...)
	}
	return b
}

// roundTripCases covers every number type, mode and delta encoding, with
// chunk sizes around the batch size and bin counts from 1 to 2000.
func roundTripCases() []rtCase {
	rng := rand.New(rand.NewPCG(1, 2))
	var cases []rtCase
	type modeSpec struct {
		mode int
		base uint64
		k    uint
	}
	modesFor := func(t numType) []modeSpec {
		if t.kind != 'f' {
			return []modeSpec{{mode: modeClassic}, {modeIntMult, 7, 0}, {modeIntMult, 1000, 0}}
		}
		return []modeSpec{
			{mode: modeClassic},
			{modeFloatMult, floatOf(t, 0.1), 0},
			{modeFloatMult, floatOf(t, 3), 0},
			{modeFloatQuant, 0, 1},
			{modeFloatQuant, 0, mantissaBits(t) - 2},
		}
	}
	type deltaSpec struct {
		delta           int
		order           int
		sec             bool
		window, stateLg uint
	}
	deltas := []deltaSpec{
		{delta: deltaNone},
		{delta: deltaConsecutive, order: 1},
		{delta: deltaConsecutive, order: 2, sec: true},
		{delta: deltaConsecutive, order: 7},
		{delta: deltaLookback, window: 1, stateLg: 0},
		{delta: deltaLookback, window: 8, stateLg: 3, sec: true},
	}
	sizes := []int{1, 5, 256, 257, 1000, 2000}
	binCounts := []int{1, 2, 7, 64, 2000}
	i := 0
	for _, t := range allTypes {
		for _, m := range modesFor(t) {
			if m.mode == modeIntMult && t.bits == 8 && m.base > 255 {
				m.base = 13
			}
			for _, d := range deltas {
				i++
				n := sizes[i%len(sizes)]
				if d.delta == deltaLookback && n <= 1<<d.stateLg {
					// pco never uses lookback on fewer numbers than its state
					// (its encoder and decoder disagree on where they go).
					n += 1 << d.stateLg
				}
				c := encChunk{
					typ: t, mode: m.mode, base: m.base, k: m.k,
					delta: d.delta, order: d.order, secDelta: d.sec, windowLog: d.window, stateLog: d.stateLg,
					bins: binCounts[i%len(binCounts)],
				}
				c.nums = genNums(rng, t, m.mode, m.base, m.k, n)
				if d.delta == deltaLookback {
					stateN := 1 << d.stateLg
					for j := stateN; j < n; j++ {
						c.lookbacks = append(c.lookbacks, 1+rng.Uint64N(1<<d.window))
					}
				}
				name := fmt.Sprintf("%c%d/mode%d-%d-%d/delta%d-%d-%v-%d-%d/n%d/bins%d",
					t.kind, t.bits, m.mode, m.base&0xffff, m.k, d.delta, d.order, d.sec, d.window, d.stateLg, n, c.bins)
				cases = append(cases, rtCase{name, []encChunk{c}})
			}
		}
	}
	// Dict mode for every type, and conv1 delta encoding (pco 1.0) for the
	// types of at most 32 bits, with a second-order extrapolation and a
	// quantized smoothing predictor.
	for j, t := range allTypes {
		n := sizes[j%len(sizes)] + 3
		nums := genNums(rng, t, modeClassic, 0, 0, n)
		for k := range nums {
			nums[k] = nums[k%17] // few distinct values
		}
		c := encChunk{typ: t, nums: nums, mode: modeDict, bins: binCounts[j%len(binCounts)]}
		if j%2 == 1 {
			c.delta, c.order = deltaConsecutive, 1
		}
		cases = append(cases, rtCase{fmt.Sprintf("%c%d/dict/delta%d/n%d", t.kind, t.bits, c.delta, n), []encChunk{c}})
		if t.bits > 32 {
			continue
		}
		for _, cv := range []conv1{
			{quant: 0, bias: 0, weights: []int64{-1, 2}},
			{quant: 4, bias: 100, weights: []int64{3, 5, 8}},
		} {
			mode, base := modeClassic, uint64(0)
			if t.kind != 'f' && len(cv.weights) == 3 {
				mode, base = modeIntMult, 3
			}
			c := encChunk{typ: t, mode: mode, base: base, delta: deltaConv1, conv: cv, bins: 8,
				nums: genNums(rng, t, mode, base, 0, n)}
			cases = append(cases, rtCase{fmt.Sprintf("%c%d/conv1-%d/mode%d/n%d", t.kind, t.bits, len(cv.weights), mode, n), []encChunk{c}})
		}
	}
	// Several chunks in one stream, of different modes and delta encodings,
	// one of them past 2^16 numbers.
	mk := func(t numType, mode int, base uint64, delta, order, n, bins int) encChunk {
		return encChunk{typ: t, mode: mode, base: base, delta: delta, order: order, bins: bins,
			nums: genNums(rng, t, mode, base, 0, n)}
	}
	cases = append(cases, rtCase{"chunks/i32", []encChunk{
		mk(tI32, modeClassic, 0, deltaNone, 0, 300, 16),
		mk(tI32, modeIntMult, 10, deltaConsecutive, 1, 70000, 200),
		mk(tI32, modeClassic, 0, deltaConsecutive, 3, 1, 1),
	}})
	cases = append(cases, rtCase{"chunks/f64", []encChunk{
		mk(tF64, modeFloatMult, floatOf(tF64, 0.01), deltaConsecutive, 2, 4096, 100),
		mk(tF64, modeClassic, 0, deltaNone, 0, 513, 3),
	}})
	return cases
}

func TestRoundTrip(t *testing.T) {
	dec, err := codec.Lookup([]byte(`{"id": "pcodec", "level": 8}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range roundTripCases() {
		t.Run(c.name, func(t *testing.T) {
			want := c.want()
			for _, uniform := range []byte{0, c.chunks[0].typ.code} {
				src := encodeStandalone(uniform, c.chunks...)
				got, err := dec.Decode(nil, src, len(want), -1)
				if err != nil {
					t.Fatalf("uniform %d: %v", uniform, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("uniform %d: decoded numbers differ (first at byte %d)", uniform, firstDiff(got, want))
				}
				// With only a maximum size, and into a reused buffer.
				got, err = dec.Decode(make([]byte, 0, 10), src, -1, len(want)+100)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("uniform %d, max size: %v", uniform, err)
				}
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestEmpty(t *testing.T) {
	src := encodeStandalone(0)
	got, err := decoder{}.Decode(nil, src, 0, -1)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty stream: %d bytes, %v", len(got), err)
	}
	if _, err := (decoder{}).Decode(nil, src, 4, -1); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("empty stream for 4 bytes: err = %v, want ErrCorrupt", err)
	}
}
