package pcodec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// FixturesEnv names a folder of reference fixtures (see fixtureDirs).
const FixturesEnv = "NCZARRFS_PCODEC_FIXTURES"

// fixtureDirs lists the folders of reference fixtures to check: the one
// FixturesEnv names, and the project's shared/fixtures/pcodec beside the
// repository root when it exists. A folder may hold, at any depth:
//   - numcodecs' fixture/pcodec layout: array.NN.npy beside folders
//     codec.MM holding config.json and encoded.NN.dat;
//   - pcodec's pco/assets/*.pco, whose numbers pco's compatibility tests
//     define (see assetWant);
//   - any other name.pco beside name.raw, its numbers little-endian;
//   - Zarr arrays (zarrs' tests/data array_pcodec*.zarr), whose chunks
//     hold the values zarrs' array tests assert.
func fixtureDirs(t *testing.T) []string {
	var dirs []string
	if d := os.Getenv(FixturesEnv); d != "" {
		dirs = append(dirs, d)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	shared := filepath.Join(root, "..", "shared", "fixtures", "pcodec")
	if st, err := os.Stat(shared); err == nil && st.IsDir() {
		dirs = append(dirs, shared)
	}
	return dirs
}

// readNPY returns the data of a little-endian .npy file and its descr.
func readNPY(path string) (string, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	if len(b) < 10 || string(b[1:6]) != "NUMPY" {
		return "", nil, fmt.Errorf("%s: not a .npy file", path)
	}
	var hlen, off int
	if b[6] == 1 {
		hlen, off = int(binary.LittleEndian.Uint16(b[8:])), 10
	} else {
		hlen, off = int(binary.LittleEndian.Uint32(b[8:])), 12
	}
	header := string(b[off : off+hlen])
	m := regexp.MustCompile(`'descr': '([^']+)'`).FindStringSubmatch(header)
	if m == nil {
		return "", nil, fmt.Errorf("%s: no descr", path)
	}
	return m[1], b[off+hlen:], nil
}

type fixtureResult struct{ ran, passed int }

func checkNumcodecsFixtures(t *testing.T, dir string, res *fixtureResult) {
	cfgs, _ := filepath.Glob(filepath.Join(dir, "codec.*", "config.json"))
	for _, cfg := range cfgs {
		encs, _ := filepath.Glob(filepath.Join(filepath.Dir(cfg), "encoded.*.dat"))
		for _, enc := range encs {
			num := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(enc), "encoded."), ".dat")
			descr, want, err := readNPY(filepath.Join(dir, "array."+num+".npy"))
			if err != nil {
				t.Error(err)
				continue
			}
			src, err := os.ReadFile(enc)
			if err != nil {
				t.Fatal(err)
			}
			res.ran++
			name, _ := filepath.Rel(dir, enc)
			got, err := decoder{}.Decode(nil, src, len(want), -1)
			if err != nil {
				t.Errorf("%s (%s): %v", name, descr, err)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s (%s): decoded bytes differ from the array", name, descr)
				continue
			}
			res.passed++
		}
	}
}

// checkAsset decodes a .pco file: one of pco's compatibility assets, or a
// stream whose numbers are beside it in a .raw file (little-endian).
func checkAsset(t *testing.T, path string, res *fixtureResult) {
	want := assetWant[filepath.Base(path)]
	if raw, err := os.ReadFile(strings.TrimSuffix(path, ".pco") + ".raw"); err == nil {
		want = func() []byte { return raw }
	}
	if want == nil {
		t.Errorf("%s: no expected numbers known for this asset", path)
		return
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res.ran++
	w := want()
	got, err := decoder{}.Decode(nil, src, len(w), -1)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(path), err)
		return
	}
	if !bytes.Equal(got, w) {
		t.Errorf("%s: decoded numbers differ from pco's", filepath.Base(path))
		return
	}
	res.passed++
}

func TestReferenceFixtures(t *testing.T) {
	dirs := fixtureDirs(t)
	if len(dirs) == 0 {
		t.Skipf("no reference fixtures: set %s or add ../shared/fixtures/pcodec", FixturesEnv)
	}
	for _, root := range dirs {
		var res fixtureResult
		zarrs := 0
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				if strings.HasPrefix(d.Name(), "array_pcodec") {
					zarrs++ // TestZarrsArrays reads these
					return filepath.SkipDir
				}
				if m, _ := filepath.Glob(filepath.Join(path, "codec.*", "config.json")); len(m) > 0 {
					checkNumcodecsFixtures(t, path, &res)
				}
				return nil
			}
			if err == nil && strings.HasSuffix(path, ".pco") {
				checkAsset(t, path, &res)
			}
			return nil
		})
		t.Logf("%s: %d of %d fixtures decode to their reference", root, res.passed, res.ran)
		if res.ran == 0 && zarrs == 0 {
			t.Errorf("%s holds no fixtures", root)
		}
	}
}
