package filters_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/codectest"
)

// crc32cReference computes CRC-32C of each payload with Python's crc32c
// module (Debian's python3-crc32c), an implementation independent of Go's.
// numcodecs 0.11, the one Debian has, predates its CRC32C codec, so the
// chunks are assembled here around the reference checksums.
func crc32cReference(t *testing.T, payloads [][]byte) []uint32 {
	t.Helper()
	var hexes []string
	for _, p := range payloads {
		hexes = append(hexes, hex.EncodeToString(p))
	}
	script := `import sys, crc32c
for a in sys.argv[1:]: print(crc32c.crc32c(bytes.fromhex(a)))`
	out, err := exec.Command(codectest.Python, append([]string{"-c", script}, hexes...)...).Output()
	if err != nil {
		t.Fatalf("python crc32c (install python3-crc32c): %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(payloads) {
		t.Fatalf("python printed %d sums for %d payloads", len(lines), len(payloads))
	}
	sums := make([]uint32, len(lines))
	for i, l := range lines {
		v, err := strconv.ParseUint(l, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = uint32(v)
	}
	return sums
}

func TestCRC32C(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	payloads := [][]byte{{}, []byte("123456789"), {0}}
	for _, n := range []int{1, 7, 64, 1000, 4099} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		payloads = append(payloads, p)
	}
	sums := crc32cReference(t, payloads)
	for _, loc := range []string{"", "end", "start"} {
		config := `{"id":"crc32c"}`
		if loc != "" {
			config = `{"id":"crc32c","location":"` + loc + `"}`
		}
		dec, err := codec.Lookup(json.RawMessage(config))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range payloads {
			sum := binary.LittleEndian.AppendUint32(nil, sums[i])
			chunk := append(append([]byte(nil), p...), sum...)
			if loc == "start" {
				chunk = append(sum, p...)
			}
			got, err := dec.Decode(nil, chunk, len(p), -1)
			if err != nil || string(got) != string(p) {
				t.Errorf("%s, %d bytes: got %d bytes, %v", config, len(p), len(got), err)
			}
			for _, flip := range []int{0, len(chunk) / 2, len(chunk) - 1} {
				bad := append([]byte(nil), chunk...)
				bad[flip] ^= 0x10
				if _, err := dec.Decode(nil, bad, len(p), -1); !errors.Is(err, codec.ErrCorrupt) {
					t.Errorf("%s, %d bytes, byte %d flipped: err = %v, want ErrCorrupt", config, len(p), flip, err)
				}
			}
		}
		if _, err := dec.Decode(nil, []byte{1, 2, 3}, -1, 100); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%s: 3-byte chunk: err = %v, want ErrCorrupt", config, err)
		}
	}
	if _, err := codec.Lookup(json.RawMessage(`{"id":"crc32c","location":"middle"}`)); err == nil {
		t.Error("location middle: no error")
	}
}
