package test

import (
	"bytes"
	"context"
	"html"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/describe/preview"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"

	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
)

// Attribute values that would be markup if the page did not escape them.
const (
	scriptAttr = `<script>document.title="pwned"</script>`
	imgAttr    = `"><img src=x onerror="document.title='pwned'">`
)

// pageFixture writes, with zarr-python, a dataset whose attributes and
// names hold markup, and returns its folder.
func pageFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np, numcodecs
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
g.attrs["title"] = sys.argv[2]
g.attrs["comment"] = sys.argv[3]
g.attrs["history"] = "written by the preview test; " + "a long line of text " * 12
lat = g.create_dataset("lat", data=np.linspace(-60, 60, 40), chunks=(40,))
lat.attrs.update({"_ARRAY_DIMENSIONS": ["lat"], "units": "degrees_north"})
lon = g.create_dataset("lon", data=np.linspace(0, 354, 60), chunks=(60,))
lon.attrs.update({"_ARRAY_DIMENSIONS": ["lon"], "units": "degrees_east"})
t = g.create_dataset("temperature", shape=(3, 40, 60), chunks=(1, 20, 30), dtype="<f4", compressor=numcodecs.Zstd())
y, x = np.meshgrid(np.linspace(-60, 60, 40), np.linspace(0, 354, 60), indexing="ij")
t[:] = (280 + 20 * np.cos(np.radians(y)) + 5 * np.sin(np.radians(2 * x)))[None].repeat(3, 0).astype("<f4")
t.attrs.update({"_ARRAY_DIMENSIONS": ["time", "lat", "lon"], "units": "K", "long_name": sys.argv[2], "note": sys.argv[3]})
odd = g.create_dataset("a&b c", data=np.arange(12, dtype="<i2").reshape(3, 4), chunks=(2, 2))
s = g.create_group("surface")
s.attrs["comment"] = sys.argv[3]
lv = s.create_dataset("level", data=np.arange(200, dtype="<i4").reshape(10, 20), chunks=(5, 5))
lv.attrs["long_name"] = "sea level"
`
	if out, err := exec.Command(python, "-c", script, dir, scriptAttr, imgAttr).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	return filepath.Join(dir, "ds")
}

// chromium runs headless Chromium, as root allows it, with a fresh
// profile, and returns its stdout.
func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	testenv.Require(t, "chromium (Debian package chromium)", err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, clip(stderr.String()))
	}
	return out
}

// screenshotDir is where the screenshots are kept for a person to look at:
// $NCZARRFS_TEST_OUT, else a folder in the temporary directory that the
// test names in its log and does not remove.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NCZARRFS_TEST_OUT")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "nczarrfs-index-html-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	linkRE  = regexp.MustCompile(`\s(?:href|src)="([^"]*)"`)
	nameRE  = regexp.MustCompile(`<code class="name">([^<]*)</code>`)
	shapeRE = regexp.MustCompile(`<td data-label="shape" class="shape">([^<]*)</td>`)
	tagRE   = regexp.MustCompile(`<([a-zA-Z]+)[\s>]`)
)

// TestIndexHTMLInChromium opens index.html of a mounted dataset, and of
// its sub-group, in headless Chromium: the DOM it builds lists every
// array with its shape, every link and picture resolves to a file of the
// mount, markup in attributes is text, and screenshots at 360 and 1,920
// pixels wide are kept.
func TestIndexHTMLInChromium(t *testing.T) {
	ds := pageFixture(t)
	mnt := mount(t, ds)
	shots := screenshotDir(t)
	for _, tc := range []struct {
		group  string
		arrays map[string]string // name -> shape
	}{
		{"", map[string]string{"temperature": "(3, 40, 60)", "lat": "(40)", "lon": "(60)", "a&b c": "(3, 4)"}},
		{"surface", map[string]string{"level": "(10, 20)"}},
	} {
		page := filepath.Join(mnt, tc.group, "index.html")
		dom := string(chromium(t, "--dump-dom", "file://"+page))
		if !strings.Contains(dom, "</table>") {
			t.Fatalf("%s: DOM without a table:\n%s", page, clip(dom))
		}
		names := map[string]string{}
		shapes := shapeRE.FindAllStringSubmatch(dom, -1)
		for i, m := range nameRE.FindAllStringSubmatch(dom, -1) {
			if i < len(shapes) {
				names[html.UnescapeString(m[1])] = shapes[i][1]
			}
		}
		for name, shape := range tc.arrays {
			if names[name] != shape {
				t.Errorf("%s: array %q has shape %q in the DOM, want %q (found %v)", page, name, names[name], shape, names)
			}
		}
		if len(names) != len(tc.arrays) {
			t.Errorf("%s: DOM lists arrays %v, want %v", page, names, tc.arrays)
		}
		links := linkRE.FindAllStringSubmatch(dom, -1)
		if len(links) < 4*len(tc.arrays) {
			t.Errorf("%s: only %d links", page, len(links))
		}
		for _, m := range links {
			u, err := url.Parse(html.UnescapeString(m[1]))
			if err != nil || u.Scheme != "" || u.Host != "" {
				t.Errorf("%s: link %q is not relative (%v)", page, m[1], err)
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), u.Path)); err != nil {
				t.Errorf("%s: link %q does not resolve: %v", page, m[1], err)
			}
		}
		// Markup in attribute values stays text: no element but the
		// page's own, the values visible as text.
		for _, m := range tagRE.FindAllStringSubmatch(dom, -1) {
			switch strings.ToLower(m[1]) {
			case "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "a", "code", "pre",
				"table", "thead", "tbody", "tr", "th", "td", "ul", "li", "img", "div":
			default:
				t.Errorf("%s: element <%s> in the DOM", page, m[1])
			}
		}
		if strings.Contains(dom, "pwned") && strings.Contains(dom, "<title>pwned") {
			t.Errorf("%s: a script ran", page)
		}
		if got, want := strings.Count(dom, "<img "), thumbnails(tc.group); got != want {
			t.Errorf("%s: %d img elements, want %d (one a picture)", page, got, want)
		}
		escaped := strings.Contains(dom, html.EscapeString(imgAttr)) || strings.Contains(dom, strings.NewReplacer("<", "&lt;", ">", "&gt;", "&", "&amp;").Replace(imgAttr))
		if !escaped {
			t.Errorf("%s: attribute %q not shown as text", page, imgAttr)
		}
		if tc.group == "" && !strings.Contains(dom, "&lt;script&gt;") {
			t.Errorf("%s: attribute %q not shown as text", page, scriptAttr)
		}
		for _, width := range []int{360, 1920} {
			shot := filepath.Join(shots, strings.ReplaceAll("index"+tc.group, "/", "_")+"-"+itoa(width)+".png")
			chromium(t, "--screenshot="+shot, "--window-size="+itoa(width)+",1400", "--hide-scrollbars",
				"--virtual-time-budget=10000", "file://"+page)
			f, err := os.Open(shot)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := png.DecodeConfig(f)
			f.Close()
			if err != nil || cfg.Width != width {
				t.Errorf("screenshot %s: %v, %d px wide", shot, err, cfg.Width)
			}
			t.Logf("screenshot kept: %s", shot)
		}
	}
}

// TestThumbnailsOnFirstView opens index.html of a fresh mount, root and
// sub-group, in headless Chromium, after an ls -l that showed every
// preview.png with size 0: every thumbnail loads on this first view (its
// image has a width). Chromium stats a file by path and reads no more than
// that size, so a picture must have its size before it is first read. A
// page outside the mount frames index.html and reports, once all has
// loaded, each image's natural size into the DOM Chromium dumps.
func TestThumbnailsOnFirstView(t *testing.T) {
	ds := pageFixture(t)
	mnt := mount(t, ds)
	for _, name := range []string{"temperature", "a&b c", "surface/level"} {
		st, err := os.Stat(filepath.Join(mnt, name, "preview.png"))
		if err != nil || st.Size() != 0 {
			t.Fatalf("%s/preview.png before any open: %v, size %d; want size 0", name, err, st.Size())
		}
	}
	for _, group := range []string{"", "surface"} {
		frame := filepath.Join(t.TempDir(), "frame.html")
		page := (&url.URL{Scheme: "file", Path: filepath.Join(mnt, group, "index.html")}).String()
		doc := `<!DOCTYPE html><html><body><pre id="out">not loaded</pre>
<iframe id="f" src="` + html.EscapeString(page) + `"></iframe>
<script>
window.addEventListener("load", () => {
  const lines = [];
  for (const img of document.getElementById("f").contentDocument.images)
    lines.push("IMG " + img.getAttribute("src") + " " + img.naturalWidth + "x" + img.naturalHeight);
  document.getElementById("out").textContent = lines.join("\n");
});
</script></body></html>`
		if err := os.WriteFile(frame, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		dom := html.UnescapeString(string(chromium(t, "--allow-file-access-from-files", "--dump-dom", "file://"+frame)))
		imgs := regexp.MustCompile(`IMG (\S+) (\d+)x(\d+)`).FindAllStringSubmatch(dom, -1)
		if len(imgs) != thumbnails(group) {
			t.Fatalf("group %q: %d images reported, want %d:\n%s", group, len(imgs), thumbnails(group), clip(dom))
		}
		for _, m := range imgs {
			if m[2] == "0" || m[3] == "0" {
				t.Errorf("group %q: %s is a broken image on the first view (%sx%s)", group, m[1], m[2], m[3])
			}
		}
	}
}

// thumbnails is the number of arrays with a picture in the test's group.
func thumbnails(group string) int {
	if group == "" {
		return 2 // temperature, "a&b c"
	}
	return 1
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestPreviewCommandMatchesMount checks that nczarrfs preview writes the
// mount's preview.png for the default slice, and what package preview
// draws for another slice and size.
func TestPreviewCommandMatchesMount(t *testing.T) {
	ds := pageFixture(t)
	mnt := mount(t, ds)
	fromMount, err := os.ReadFile(filepath.Join(mnt, "temperature", "preview.png"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "t.png")
	mustRun(t, "preview", ds, "temperature", "-o", out)
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, fromMount) {
		t.Errorf("nczarrfs preview wrote %d bytes (%v), the mount's preview.png has %d", len(got), err, len(fromMount))
	}
	store, err := file.Open(ds)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	d, err := nczarr.Open(context.Background(), store, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := preview.Render(context.Background(), d, "temperature", preview.Options{Index: []int64{2}, Size: 12})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "preview", "--index", "2", "--size", "12", ds, "/temperature"); !bytes.Equal(got, want.PNG) {
		t.Errorf("nczarrfs preview --index 2 --size 12 wrote %d bytes, want the %d preview.Render draws", len(got), len(want.PNG))
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"preview", ds, "lat"}, "only numeric arrays of 2 or more dimensions"},
		{[]string{"preview", "--index", "5", ds, "temperature"}, "outside dimension 0"},
		{[]string{"preview", "--index", "x", ds, "temperature"}, "is not an index"},
		{[]string{"preview", ds, "nope"}, "no such array"},
	} {
		r := nczarrfsCommand(t, tc.args...)
		if r.err == nil || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("nczarrfs %s: %v, stderr %q; want an error with %q", strings.Join(tc.args, " "), r.err, r.stderr, tc.msg)
		}
	}
}

// TestPreviewOfEveryFixture mounts every dataset the reference tools
// wrote (NCZarr of every netcdf-c generation, Zarr v2 of every codec,
// Zarr v3 sharded too) and opens the synthesized page of every group and
// the picture of every numeric array of 2 or more dimensions: each is a
// PNG of the slice's size that names the array, and each page lists the
// group's arrays.
func TestPreviewOfEveryFixture(t *testing.T) {
	numeric := regexp.MustCompile(`^[<>|=]?[iuf][1248]$`)
	pictures := 0
	for _, set := range fixtures(t) {
		for _, ds := range set.Datasets {
			t.Run(set.Generator+"/"+ds.Name, func(t *testing.T) {
				mnt := mount(t, ds.TreePath(set))
				groups := map[string]bool{"": true}
				for _, a := range ds.Arrays {
					dir, _ := filepath.Split(a.Path)
					groups[strings.TrimSuffix(dir, "/")] = true
					name := filepath.Join(mnt, a.Path, "preview.png")
					b, err := os.ReadFile(name)
					want := !a.Error && len(a.Shape) >= 2 && numeric.MatchString(a.Dtype) && !slices.Contains(a.Shape, 0)
					if !want {
						if err == nil {
							t.Errorf("%s: a picture of a %s array of shape %v", a.Path, a.Dtype, a.Shape)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", a.Path, err)
						continue
					}
					pictures++
					img, err := png.Decode(bytes.NewReader(b))
					if err != nil {
						t.Errorf("%s: %v", a.Path, err)
						continue
					}
					h, w := a.Shape[len(a.Shape)-2], a.Shape[len(a.Shape)-1]
					if long := max(h, w); long > preview.MaxSide {
						h, w = max(h*preview.MaxSide/long, 1), max(w*preview.MaxSide/long, 1)
					}
					if b := img.Bounds(); int64(b.Dx()) != w || int64(b.Dy()) != h {
						t.Errorf("%s: picture %dx%d of shape %v", a.Path, b.Dx(), b.Dy(), a.Shape)
					}
					if !bytes.Contains(b, []byte("tEXtTitle\x00/"+a.Path)) {
						t.Errorf("%s: no Title text naming the array", a.Path)
					}
				}
				for g := range groups {
					page, err := os.ReadFile(filepath.Join(mnt, g, "index.html"))
					if err != nil {
						t.Errorf("/%s/index.html: %v", g, err)
						continue
					}
					if !bytes.HasSuffix(page, []byte("</html>\n")) {
						t.Errorf("/%s/index.html does not end the page", g)
					}
				}
			})
		}
	}
	if pictures == 0 {
		t.Error("no fixture has a picture")
	}
	t.Logf("%d pictures", pictures)
}
