package shuffle

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// bitShuffle is the forward transform, written bit by bit from the layout
// described on BitUnshuffle; the round trip pins the fast inverse to it.
// (Bit-exactness against c-blosc is tested in package blosc with frames
// made by numcodecs.)
func bitShuffle(src []byte, count, typesize int) []byte {
	out := make([]byte, count*typesize)
	for i := 0; i < count; i++ {
		for j := 0; j < typesize; j++ {
			b := src[i*typesize+j]
			for k := 0; k < 8; k++ {
				if b>>k&1 != 0 {
					bit := (j*8+k)*count + i
					out[bit/8] |= 1 << (bit % 8)
				}
			}
		}
	}
	return out
}

func TestBitUnshuffle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typesize := range []int{1, 2, 3, 4, 7, 8, 16, 33} {
		for _, count := range []int{0, 8, 16, 56, 64, 72, 128, 200, 1024} {
			src := make([]byte, count*typesize)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			shuffled := bitShuffle(src, count, typesize)
			got := make([]byte, len(src))
			BitUnshuffle(got, shuffled, make([]byte, len(src)), count, typesize)
			if !bytes.Equal(got, src) {
				t.Fatalf("typesize %d count %d: round trip differs", typesize, count)
			}
		}
	}
}

func TestUnshuffle(t *testing.T) {
	for _, typesize := range []int{1, 2, 3, 4, 5, 8, 16} {
		for _, n := range []int{0, 1, 7, 64, 101, 1000, 4099} {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(i*31 + 7)
			}
			// Forward shuffle by definition, trailing partial element as is.
			count := n / typesize
			shuffled := make([]byte, n)
			for i := 0; i < count; i++ {
				for j := 0; j < typesize; j++ {
					shuffled[j*count+i] = src[i*typesize+j]
				}
			}
			copy(shuffled[count*typesize:], src[count*typesize:])
			got := make([]byte, n)
			Unshuffle(got, shuffled, typesize)
			if !bytes.Equal(got, src) {
				t.Fatalf("typesize %d n %d: round trip differs", typesize, n)
			}
		}
	}
}

func BenchmarkBitUnshuffle(b *testing.B) {
	const count, typesize = 1 << 17, 8
	src := make([]byte, count*typesize)
	dst := make([]byte, len(src))
	tmp := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		BitUnshuffle(dst, src, tmp, count, typesize)
	}
}

func BenchmarkUnshuffle(b *testing.B) {
	for _, typesize := range []int{2, 4, 8} {
		b.Run(strconv.Itoa(typesize), func(b *testing.B) {
			src := make([]byte, 1<<20)
			dst := make([]byte, len(src))
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				Unshuffle(dst, src, typesize)
			}
		})
	}
}

// TestUnshuffleVector checks the vector loops against the scalar ones on
// random bytes, for counts around multiples of their 16 elements.
func TestUnshuffleVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	scalar := map[int]func(dst, src []byte, count, from int){2: unshuffle2, 4: unshuffle4, 8: unshuffle8}
	for _, typesize := range []int{2, 4, 8} {
		for count := 0; count <= 100; count++ {
			src := make([]byte, count*typesize)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			want := make([]byte, len(src))
			scalar[typesize](want, src, count, 0)
			got := make([]byte, len(src))
			Unshuffle(got, src, typesize)
			if !bytes.Equal(got, want) {
				t.Fatalf("typesize %d count %d: vector and scalar loops differ", typesize, count)
			}
		}
	}
}

// FuzzUnshuffle checks Unshuffle against the scalar loops alone on any
// input and element size.
func FuzzUnshuffle(f *testing.F) {
	f.Add(bytes.Repeat([]byte("0123456789abcdef"), 9), uint8(4))
	f.Add([]byte("short"), uint8(8))
	f.Fuzz(func(t *testing.T, src []byte, ts uint8) {
		typesize := []int{2, 4, 8}[int(ts)%3]
		count := len(src) / typesize
		want := make([]byte, len(src))
		map[int]func(dst, src []byte, count, from int){2: unshuffle2, 4: unshuffle4, 8: unshuffle8}[typesize](want, src[:count*typesize], count, 0)
		copy(want[count*typesize:], src[count*typesize:])
		got := make([]byte, len(src))
		Unshuffle(got, src, typesize)
		if !bytes.Equal(got, want) {
			t.Fatalf("typesize %d, %d bytes: vector and scalar loops differ", typesize, len(src))
		}
	})
}
