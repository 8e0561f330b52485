package describe

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexHTMLEscapes renders the page of a group whose names and
// attributes hold markup: all of it is text, every array is listed with
// its links, and only arrays with a picture get a thumbnail.
func TestIndexHTMLEscapes(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
g.attrs["title"] = "<script>alert(1)</script>"
g.attrs["x"] = "\"><img src=x onerror=alert(2)>"
g.attrs["n"] = [1, 2]
a = g.create_dataset("t<b>", data=np.zeros((2, 3), dtype="<f4"))
a.attrs["units"] = "<i>K</i>"
a.attrs["long_name"] = "temp & co"
g.create_dataset("s", data=np.array(["a", "bc"], dtype=object), dtype=str)
g.create_group("sub?#")
`
	if out, err := exec.Command(python, "-c", script, filepath.Join(dir, "ds")).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	ds := open(t, filepath.Join(dir, "ds"))
	b, err := IndexHTML(context.Background(), ds, "", "ds")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;",
		"&#34;&gt;&lt;img src=x onerror=alert(2)&gt;",
		"<td data-label=\"value\">1b, 2b</td>",
		"<code class=\"name\">t&lt;b&gt;</code>",
		"&lt;i&gt;K&lt;/i&gt;", "temp &amp; co",
		`href="./t%3Cb%3E/preview.png"`, `href="./t%3Cb%3E/data.npy"`, `href="./t%3Cb%3E/data.vrt"`,
		`href="./s/data.json"`, `href="./sub%3F%23/index.html"`,
		"<pre class=\"header\">netcdf ds {",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<img src=x") || strings.Contains(page, "<i>") {
		t.Errorf("markup from the data reached the page:\n%s", page)
	}
	if n := strings.Count(page, "<img "); n != 1 {
		t.Errorf("%d thumbnails, want 1 (t<b>; s holds strings)", n)
	}
}
