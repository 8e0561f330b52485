package preview

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"

	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
)

// referenceCase is one picture testdata/gen.py drew with matplotlib.
type referenceCase struct {
	Path          string
	Index         []int64
	Size          int
	Height, Width int
	Vmin, Vmax    float64
}

var (
	refOnce  sync.Once
	refDir   string
	refCases map[string]referenceCase
	refErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if refDir != "" {
		os.RemoveAll(refDir)
	}
	os.Exit(code)
}

// references writes the dataset and matplotlib's pictures of it, once
// per test process.
func references(t *testing.T) (dir string, cases map[string]referenceCase) {
	t.Helper()
	err := exec.Command(testenv.Python, "-c", "import zarr, matplotlib").Run()
	testenv.Require(t, "zarr-python 2 and matplotlib (Debian's python3-zarr, python3-matplotlib)", err)
	refOnce.Do(func() {
		if refDir, refErr = os.MkdirTemp("", "preview-test-"); refErr != nil {
			return
		}
		if out, err := exec.Command(testenv.Python, "testdata/gen.py", refDir).CombinedOutput(); err != nil {
			refErr = fmt.Errorf("gen.py: %v\n%s", err, out)
			return
		}
		b, err := os.ReadFile(filepath.Join(refDir, "cases.json"))
		if err == nil {
			err = json.Unmarshal(b, &refCases)
		}
		refErr = err
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return refDir, refCases
}

func openDataset(t *testing.T, dir string, c *cache.Cache) *nczarr.Dataset {
	t.Helper()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// pngText returns the tEXt chunks of a PNG.
func pngText(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for b = b[8:]; len(b) >= 12; {
		n := binary.BigEndian.Uint32(b)
		kind, data := string(b[4:8]), b[8:8+n]
		if kind == "tEXt" {
			k, v, _ := bytes.Cut(data, []byte{0})
			out[string(k)] = string(v)
		}
		b = b[12+n:]
	}
	return out
}

func TestPicturesMatchMatplotlib(t *testing.T) {
	dir, cases := references(t)
	ds := openDataset(t, filepath.Join(dir, "ds.zarr"), cache.New(16<<20))
	if len(cases) < 9 {
		t.Fatalf("gen.py wrote %d cases", len(cases))
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(dir, name+".rgba"))
			if err != nil {
				t.Fatal(err)
			}
			pic, err := Render(context.Background(), ds, c.Path, Options{Index: c.Index, Size: c.Size})
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(pic.PNG))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != c.Width || b.Dy() != c.Height {
				t.Fatalf("picture is %dx%d, matplotlib's %dx%d", b.Dx(), b.Dy(), c.Width, c.Height)
			}
			if len(want) != 4*c.Width*c.Height {
				t.Fatalf("reference has %d bytes", len(want))
			}
			bad := 0
			for y := range c.Height {
				for x := range c.Width {
					n := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
					got := []byte{n.R, n.G, n.B, n.A}
					ref := want[4*(y*c.Width+x):][:4]
					if !bytes.Equal(got, ref) {
						if bad++; bad <= 5 {
							t.Errorf("pixel (%d, %d) = %v, matplotlib %v", x, y, got, ref)
						}
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d pixels differ", bad, c.Width*c.Height)
			}
			text := pngText(t, pic.PNG)
			if text["Title"] != "/"+c.Path {
				t.Errorf("Title %q", text["Title"])
			}
			lo, hi, _ := strings.Cut(text["Range"], " to ")
			// A float32 range is written as short as float32 allows.
			same := func(text string, v float64) bool {
				f, err := strconv.ParseFloat(text, 64)
				return err == nil && (f == v || float64(float32(f)) == v)
			}
			if !same(lo, c.Vmin) {
				t.Errorf("Range %q, matplotlib scaled from %v", text["Range"], c.Vmin)
			}
			if !same(hi, c.Vmax) {
				t.Errorf("Range %q, matplotlib scaled to %v", text["Range"], c.Vmax)
			}
			if text["Colormap"] == "" || !strings.HasPrefix(text["Slice"], "[") || text["Sampling"] == "" {
				t.Errorf("text chunks %q", text)
			}
		})
	}
}

// A picture whose chunks would decode to more than the bound samples
// whole chunks, says so, and decodes no more than the bound.
func TestPictureBoundsDecoding(t *testing.T) {
	dir, _ := references(t)
	for _, bound := range []int64{4 * 10000, 15 * 10000, 1 << 30} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			c := cache.New(64 << 20)
			ds := openDataset(t, filepath.Join(dir, "ds.zarr"), c)
			// wide: 300x2000 uint8 in chunks of 100x100 (10,000 bytes).
			pic, err := Render(context.Background(), ds, "wide", Options{MaxDecode: bound})
			if err != nil {
				t.Fatal(err)
			}
			decoded := c.Stats().LoadedBytes
			text := pngText(t, pic.PNG)
			sampled := strings.HasPrefix(text["Sampling"], "whole chunks sampled evenly")
			if decoded > bound {
				t.Errorf("decoded %d bytes, bound %d", decoded, bound)
			}
			if sampled != (bound < 60*10000) {
				t.Errorf("Sampling %q with a bound of %d bytes", text["Sampling"], bound)
			}
			if !sampled && decoded != 60*10000 {
				t.Errorf("decoded %d bytes of chunks, want all 60 chunks", decoded)
			}
			img, err := png.Decode(bytes.NewReader(pic.PNG))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() > 1024 || b.Dy() > 1024 || b.Dx() < b.Dy() {
				t.Errorf("picture %v", b)
			}
		})
	}
}

// A picture decodes only the chunks its samples fall in, even when the
// rows between them are read in one block.
func TestPictureDecodesOnlySampledChunks(t *testing.T) {
	dir, _ := references(t)
	c := cache.New(64 << 20)
	ds := openDataset(t, filepath.Join(dir, "ds.zarr"), c)
	// tall: 2000x30 int32 in chunks of one row (120 bytes); 100 rows drawn.
	if _, err := Render(context.Background(), ds, "tall", Options{Size: 100}); err != nil {
		t.Fatal(err)
	}
	if got := c.Stats().LoadedBytes; got != 100*120 {
		t.Errorf("decoded %d bytes of chunks, want the 100 sampled rows' %d", got, 100*120)
	}
}

func TestRenderRefuses(t *testing.T) {
	dir, _ := references(t)
	ds := openDataset(t, filepath.Join(dir, "ds.zarr"), nil)
	for _, tc := range []struct {
		path  string
		opts  Options
		error string
	}{
		{"lat", Options{}, "only numeric arrays of 2 or more dimensions"},
		{"float", Options{Index: []int64{3}}, "outside dimension 0"},
		{"float", Options{Index: []int64{0, 0}}, "needs 1 indices"},
		{"float", Options{Size: -1}, "must be 1 to 8192"},
		{"float", Options{Size: 8193}, "must be 1 to 8192"},
		{"nope", Options{}, "no such array"},
	} {
		_, err := Render(context.Background(), ds, tc.path, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.error) {
			t.Errorf("%s %+v: %v, want %q", tc.path, tc.opts, err, tc.error)
		}
	}
}

// TestPlanBoundsHugeSlices plans pictures of slices far larger than
// memory: at most 1,024 pixels a side, no more chunks than the bound,
// spread over the whole slice.
func TestPlanBoundsHugeSlices(t *testing.T) {
	for _, tc := range []struct {
		shape, chunks []int64
		itemSize      int
		sampled       bool
	}{
		{[]int64{1e9, 1e9}, []int64{1000, 1000}, 4, true},
		{[]int64{3, 1 << 40, 10}, []int64{1, 1 << 24, 1}, 8, true},  // 128 MiB chunks
		{[]int64{2, 1 << 30, 10}, []int64{1, 1 << 26, 10}, 8, true}, // one chunk is over the bound
		{[]int64{100000, 300}, []int64{100000, 1}, 1, false},
		{[]int64{5000, 5000}, []int64{5000, 5000}, 4, false}, // one 95 MiB chunk
	} {
		a := &nczarr.Array{Meta: nczarr.Meta{Shape: tc.shape, Chunks: tc.chunks}, ItemSize: tc.itemSize}
		p := plan(a, Options{Size: MaxSide, MaxDecode: MaxDecode})
		rank := len(tc.shape)
		ch, cw := tc.chunks[rank-2], tc.chunks[rank-1]
		chunkBytes := int64(tc.itemSize)
		for _, c := range tc.chunks {
			chunkBytes *= c
		}
		decoded := touched(p.rows, ch) * touched(p.cols, cw) * chunkBytes
		if len(p.rows) > MaxSide || len(p.cols) > MaxSide || len(p.rows) == 0 || len(p.cols) == 0 {
			t.Errorf("%v: picture %dx%d", tc.shape, len(p.cols), len(p.rows))
		}
		if decoded > max(MaxDecode, chunkBytes) {
			t.Errorf("%v: decodes %d bytes", tc.shape, decoded)
		}
		if got := strings.HasPrefix(p.note, "whole chunks sampled evenly"); got != tc.sampled {
			t.Errorf("%v: note %q", tc.shape, p.note)
		}
		h, w := tc.shape[rank-2], tc.shape[rank-1]
		if !slices.IsSorted(p.rows) || !slices.IsSorted(p.cols) || p.rows[len(p.rows)-1] >= h || p.cols[len(p.cols)-1] >= w {
			t.Errorf("%v: rows %d..%d, columns %d..%d", tc.shape, p.rows[0], p.rows[len(p.rows)-1], p.cols[0], p.cols[len(p.cols)-1])
		}
		// Spread: samples in both halves, unless one chunk row is all.
		if h > 2*ch && chunkBytes < MaxDecode && (p.rows[0] >= h/2 || p.rows[len(p.rows)-1] < h/2) {
			t.Errorf("%v: rows %d..%d of %d", tc.shape, p.rows[0], p.rows[len(p.rows)-1], h)
		}
	}
}

// TestValidity checks the fill values and valid ranges of each form the
// metadata writes them in.
func TestValidity(t *testing.T) {
	f4 := nczarr.DType{Str: "<f4", Kind: 'f', Size: 4}
	i2 := nczarr.DType{Str: "<i2", Kind: 'i', Size: 2}
	attr := func(name, value string) nczarr.Attr { return nczarr.Attr{Name: name, Value: json.RawMessage(value)} }
	for _, tc := range []struct {
		name           string
		dtype          nczarr.DType
		fill           any
		attrs          []nczarr.Attr
		valid, invalid []float64
	}{
		{"v3 hex fill", f4, "0x44fa0000", nil, []float64{1, 2001}, []float64{2000, math.NaN(), math.Inf(1)}},
		{"json number fill", i2, json.Number("-1"), nil, []float64{0, 1}, []float64{-1}},
		{"NaN fill", f4, "NaN", nil, []float64{0}, []float64{math.NaN()}},
		{"_FillValue in float32", f4, nil, []nczarr.Attr{attr("_FillValue", "9.96921e36")}, []float64{9.96921e36}, []float64{float64(float32(9.96921e36))}},
		{"missing_value list", i2, nil, []nczarr.Attr{attr("missing_value", "[7, 8]")}, []float64{6, 9}, []float64{7, 8}},
		{"valid_range", f4, nil, []nczarr.Attr{attr("valid_range", "[0, 10]")}, []float64{0, 10}, []float64{-0.5, 10.5}},
		{"valid_min and valid_max", i2, nil, []nczarr.Attr{attr("valid_min", "2"), attr("valid_max", "4")}, []float64{2, 4}, []float64{1, 5}},
		{"quoted NaN attribute", f4, nil, []nczarr.Attr{attr("_FillValue", `"NaN"`)}, []float64{1}, []float64{math.NaN()}},
	} {
		a := &nczarr.Array{Meta: nczarr.Meta{DType: tc.dtype, Fill: tc.fill}}
		valid := validity(a, tc.attrs)
		for _, v := range tc.valid {
			if !valid(v) {
				t.Errorf("%s: %v is not valid", tc.name, v)
			}
		}
		for _, v := range tc.invalid {
			if valid(v) {
				t.Errorf("%s: %v is valid", tc.name, v)
			}
		}
	}
}
