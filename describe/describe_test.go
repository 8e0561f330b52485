package describe

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"

	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
)

// python has zarr-python 2.x and numcodecs (Debian's python3-zarr); the
// python3 on PATH may be another one.
const python = "/usr/bin/python3"

// workDir holds the datasets the reference tools write for this run.
var workDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "describe-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	genOnce sync.Once
	genErr  error
)

// fixtures writes the test datasets once per run and returns their folder:
// cdl.file and types.file by testdata/gen_zarr.py (zarr-python), and
// basic.file by ncgen from test/fixtures/nczarr_basic.cdl (NCZarr as
// netcdf-c 4.9.0 writes it).
func fixtures(t *testing.T) string {
	t.Helper()
	genOnce.Do(func() {
		if out, err := exec.Command(python, "testdata/gen_zarr.py", workDir).CombinedOutput(); err != nil {
			genErr = fmt.Errorf("gen_zarr.py: %v\n%s", err, out)
			return
		}
		cdl, err := filepath.Abs("../test/fixtures/nczarr_basic.cdl")
		if err != nil {
			genErr = err
			return
		}
		url := "file://" + filepath.Join(workDir, "basic.file") + "#mode=nczarr,file"
		if out, err := exec.Command("ncgen", "-4", "-lb", "-o", url, cdl).CombinedOutput(); err != nil {
			genErr = fmt.Errorf("ncgen: %v\n%s", err, out)
		}
	})
	if genErr != nil {
		t.Fatal(genErr)
	}
	return workDir
}

// open opens the dataset in the directory tree dir.
func open(t *testing.T, dir string) *nczarr.Dataset {
	t.Helper()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: cache.New(64 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// ncdumpHeader runs Debian's ncdump -h on a directory tree.
func ncdumpHeader(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("ncdump", "-h", "file://"+dir+"#mode=nczarr,file").Output()
	if err != nil {
		t.Fatalf("ncdump -h %s: %v", dir, err)
	}
	return string(out)
}

// withoutNameLine drops the first line, "netcdf NAME {", whose name ncdump
// takes from the path.
func withoutNameLine(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	return rest
}

// cdlDepartures are where header.cdl departs from netcdf-c 4.9's ncdump
// -h by ncmap's attribute rule: a list's type holds every element, no
// unsigned type for an undeclared integer, bool is byte.
var cdlDepartures = map[string][][2]string{
	"cdl.file": {
		{"\t\t:flag = 1UB ;", "\t\t:flag = 1b ;"},
		{"\t\t:flags = 1UB, 0UB ;", "\t\t:flags = 1b, 0b ;"},
		{"\t\t:mixed = 1b, 2b ;", "\t\t:mixed = 1., 2.5 ;"}, // netcdf-c truncates 2.5
		{"\t\t:ubyte = 200UB ;", "\t\t:ubyte = 200s ;"},
		{"\t\t:uint = 4294967295U ;", "\t\t:uint = 4294967295LL ;"},
		{"\t\t:ushort = 40000US ;", "\t\t:ushort = 40000 ;"},
	},
}

// TestCDLMatchesNcdump: header.cdl is ncdump -h's text but where
// ncmap's typing departs from netcdf-c's (cdlDepartures).
func TestCDLMatchesNcdump(t *testing.T) {
	dir := fixtures(t)
	for _, name := range []string{"basic.file", "cdl.file"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			want := ncdumpHeader(t, path)
			for _, d := range cdlDepartures[name] {
				if !strings.Contains(want, d[0]+"\n") {
					t.Fatalf("ncdump -h prints no line %q", d[0])
				}
				want = strings.Replace(want, d[0]+"\n", d[1]+"\n", 1)
			}
			got, err := CDL(context.Background(), open(t, path), strings.TrimSuffix(name, ".file"))
			if err != nil {
				t.Fatal(err)
			}
			if withoutNameLine(string(got)) != withoutNameLine(want) {
				t.Errorf("CDL differs from ncdump -h:\n%s", lineDiff(want, string(got)))
			}
			if first, _, _ := strings.Cut(string(got), "\n"); first != "netcdf "+strings.TrimSuffix(name, ".file")+" {" {
				t.Errorf("first line %q", first)
			}
		})
	}
}

// lineDiff shows the lines of want and got that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  ncdump: %q\n  ours:   %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}
