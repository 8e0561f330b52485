// Package codectest produces reference chunks for the codec tests: it runs
// testdata/gen_chunks.py (numcodecs, and h5py for fletcher32) with the
// system Python and loads the encoded and decoded bytes it writes.
package codectest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
)

// Python is the interpreter with numcodecs, zarr and h5py installed (the
// python3 on PATH may be another one).
const Python = "/usr/bin/python3"

// Case is one reference chunk.
type Case struct {
	Name       string            `json:"name"`
	Group      string            `json:"group"`
	Filters    []json.RawMessage `json:"filters"`
	Compressor json.RawMessage   `json:"compressor"`
	Size       int               `json:"size"`
	// NumcodecsMBps is numcodecs' decoding speed on this case in MB/s
	// (bench cases only).
	NumcodecsMBps float64 `json:"numcodecs_mbps"`
	Enc           []byte  `json:"-"` // the stored chunk
	Raw           []byte  `json:"-"` // what numcodecs decodes it to
}

// Config is the configuration of the case's only codec: the compressor,
// or the single filter when there is no compressor.
func (c Case) Config() json.RawMessage {
	if len(c.Compressor) > 0 && string(c.Compressor) != "null" {
		return c.Compressor
	}
	if len(c.Filters) == 1 {
		return c.Filters[0]
	}
	return nil
}

// Script is the path of the generator.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "gen_chunks.py")
}

var (
	mu    sync.Mutex
	cache = map[string][]Case{}
)

// Generate runs the generator for groups (blosc, compressors, filters,
// chains, fletcher32, bench) into a temporary directory and loads every
// case. Results are kept for the life of the test binary, so tests,
// fuzz seeds and benchmarks share one run. It fails the test when the
// generator cannot run.
func Generate(tb testing.TB, groups ...string) []Case {
	tb.Helper()
	key := strings.Join(groups, " ")
	mu.Lock()
	defer mu.Unlock()
	if cases, ok := cache[key]; ok {
		return cases
	}
	dir, err := os.MkdirTemp("", "codectest-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(Python, append([]string{Script(), dir}, groups...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("%s %v: %v\n%s", Python, cmd.Args[1:], err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var m struct {
		Cases []Case `json:"cases"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		tb.Fatal(err)
	}
	if len(m.Cases) == 0 {
		tb.Fatalf("generator produced no cases for %v", groups)
	}
	for i := range m.Cases {
		c := &m.Cases[i]
		if c.Enc, err = os.ReadFile(filepath.Join(dir, c.Name+".enc")); err != nil {
			tb.Fatal(err)
		}
		if c.Raw, err = os.ReadFile(filepath.Join(dir, c.Name+".raw")); err != nil {
			tb.Fatal(err)
		}
		if len(c.Raw) != c.Size {
			tb.Fatalf("%s: raw has %d bytes, manifest says %d", c.Name, len(c.Raw), c.Size)
		}
	}
	cache[key] = m.Cases
	return m.Cases
}

// CheckDecode checks dec against the reference case: the exact size gives
// the bytes numcodecs encoded, so does an unknown size with max exactly
// the size (into a reused dst), a Sizer agrees with the encoded length, and
// asking for one byte more is ErrCorrupt.
func CheckDecode(t *testing.T, dec codec.Codec, c Case) {
	t.Helper()
	got, err := dec.Decode(nil, c.Enc, c.Size, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, c.Raw) {
		t.Fatalf("decoded bytes differ from numcodecs\n got %x\nwant %x", head(got), head(c.Raw))
	}
	if s, ok := dec.(codec.Sizer); ok {
		if n, ok := s.EncodedSize(c.Size); !ok || n != len(c.Enc) {
			t.Fatalf("EncodedSize(%d) = %d, %v; encoded chunk has %d bytes", c.Size, n, ok, len(c.Enc))
		}
	}
	got, err = dec.Decode(make([]byte, 0, 7), c.Enc, -1, c.Size)
	if err != nil || !bytes.Equal(got, c.Raw) {
		t.Fatalf("size -1: %v", err)
	}
	if _, err := dec.Decode(nil, c.Enc, c.Size+1, -1); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("size+1: err = %v, want ErrCorrupt", err)
	}
}

func head(b []byte) []byte { return b[:min(len(b), 48)] }
