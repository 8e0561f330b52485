package describe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"sync"

	"github.com/nczarrfs/nczarrfs/describe/preview"
	"github.com/nczarrfs/nczarrfs/nczarr"
)

// The names of the files a group's page links to, beside each array, as
// the mount names them (docs/tree.md).
const (
	indexName   = "index.html"
	previewName = "preview.png"
)

// IndexHTML renders index.html of the group at path: a static page, with
// no script, showing the group's attributes, a table of its arrays (with
// a thumbnail of each preview.png and links to the files the mount makes
// for them), links to its sub-groups, and in the root the dataset's
// header (CDL, named name). Every name and value is escaped: attributes
// are text written by anyone.
func IndexHTML(ctx context.Context, ds *nczarr.Dataset, path, name string) ([]byte, error) {
	g := ds.Group(path)
	if g == nil {
		return nil, fmt.Errorf("%q: no such group", path)
	}
	layout, err := ds.Layout(ctx, path)
	if err != nil {
		return nil, err
	}
	attrs, err := ds.Attrs(ctx, path)
	if err != nil {
		return nil, err
	}
	p := page{Name: name, Path: "/" + path, Root: path == "", Attrs: attrRows(visible(attrs))}
	if p.Root {
		cdl, err := CDL(ctx, ds, name)
		if err != nil {
			return nil, err
		}
		p.Header = string(cdl)
	}
	for _, sub := range layout.Groups {
		n := baseName(sub)
		p.Groups = append(p.Groups, link{Text: n, Href: rel(n, indexName)})
	}
	if p.Arrays, err = arrayRows(ctx, ds, layout.Arrays); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// page is what the template shows.
type page struct {
	Name, Path string
	Root       bool
	Attrs      []attrRow
	Arrays     []arrayRow
	Groups     []link
	Header     string
}

type attrRow struct{ Name, Type, Value string }

type link struct {
	Text string
	Href template.URL
}

type arrayRow struct {
	Name, Dims, Shape, Chunks, DType, Codecs, Units, LongName string
	Preview                                                   template.URL // "" when the array has no picture
	Files                                                     []link
	Error                                                     string
}

// rel is the relative URL of the file name in the folder dir, each part
// escaped, starting with "./" so that no name reads as a URL scheme.
func rel(dir, name string) template.URL {
	return template.URL("./" + url.PathEscape(dir) + "/" + url.PathEscape(name))
}

func attrRows(attrs []nczarr.Attr) []attrRow {
	var rows []attrRow
	for _, a := range attrs {
		rows = append(rows, attrRow{Name: a.Name, Type: a.Type, Value: attrText(a)})
	}
	return rows
}

// attrText is an attribute's value as text: a string as it is, anything
// else as ncdump prints it.
func attrText(a nczarr.Attr) string {
	var s string
	if json.Unmarshal(a.Value, &s) == nil {
		return s
	}
	return FormatAttr(a.Type, a.Value)
}

// indexParallel bounds the arrays whose attributes are read at once: one
// request each, which on S3 is a round trip.
const indexParallel = 16

// arrayRows reads the rows of the arrays at paths, concurrently.
func arrayRows(ctx context.Context, ds *nczarr.Dataset, paths []string) ([]arrayRow, error) {
	rows := make([]arrayRow, len(paths))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, indexParallel)
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rows[i], errs[i] = readArrayRow(ctx, ds, p)
		}()
	}
	wg.Wait()
	return rows, errors.Join(errs...)
}

func readArrayRow(ctx context.Context, ds *nczarr.Dataset, path string) (arrayRow, error) {
	a := ds.Array(path)
	info, err := ReadArrayInfo(ctx, ds, path)
	if err != nil {
		return arrayRow{}, err
	}
	n := info.Name
	row := arrayRow{Name: n, Shape: ints(info.Shape), Chunks: ints(info.Chunks), DType: info.DType, Error: info.Error}
	var dims, codecs []string
	for _, d := range info.Dimensions {
		dims = append(dims, d.Name)
	}
	for _, c := range info.Codecs {
		codecs = append(codecs, c.ID)
	}
	row.Dims, row.Codecs = strings.Join(dims, ", "), strings.Join(codecs, ", ")
	for _, at := range info.Attributes {
		switch at.Name {
		case "units":
			row.Units = attrText(at)
		case "long_name":
			row.LongName = attrText(at)
		}
	}
	if preview.Supported(a) {
		row.Preview = rel(n, previewName)
	}
	if a.Objects() {
		row.Files = append(row.Files, link{"data.json", rel(n, "data.json")})
	} else {
		row.Files = append(row.Files, link{"data", rel(n, "data")})
		if _, err := NPYHeader(a); err == nil {
			row.Files = append(row.Files, link{"data.npy", rel(n, "data.npy")})
		}
	}
	row.Files = append(row.Files, link{"info.json", rel(n, "info.json")})
	if _, ok := VRT(a, "data"); ok && !a.Objects() {
		row.Files = append(row.Files, link{"data.vrt", rel(n, "data.vrt")})
	}
	return row, nil
}

func ints(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

var pageTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Name}}{{.Path}}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 0.8em; max-width: 110em; color: #222; background: #fff; }
h1 { font-size: 1.4em; overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 0.3em 0.6em; border-bottom: 1px solid #e4e4e4; overflow-wrap: break-word; }
th { background: #f3f3f3; white-space: nowrap; }
code, pre { font: 13px/1.4 ui-monospace, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 0.8em; }
img.thumb { display: block; width: 160px; height: 120px; object-fit: contain; object-position: left top; image-rendering: pixelated; }
.files a { margin-right: 0.6em; white-space: nowrap; }
.error { color: #a00; }
@media (max-width: 700px) {
  table thead { display: none; }
  table tr { display: block; border: 1px solid #ccc; margin-bottom: 0.8em; }
  table td { display: block; border: 0; padding: 0.15em 0.6em; overflow-wrap: anywhere; }
  td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; }
  img.thumb { width: 100%; height: auto; max-height: 70vh; }
}
</style>
</head>
<body>
<h1>{{.Name}} <code>{{.Path}}</code></h1>
{{if not .Root}}<p><a href="../index.html">up</a></p>{{end}}
{{with .Attrs}}<h2>Attributes</h2>
<table class="attrs">
<thead><tr><th>name</th><th>type</th><th>value</th></tr></thead>
<tbody>
{{range .}}<tr><td data-label="name"><code>{{.Name}}</code></td><td data-label="type">{{.Type}}</td><td data-label="value">{{.Value}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{with .Arrays}}<h2>Arrays</h2>
<table class="arrays">
<thead><tr><th>picture</th><th>name</th><th>long_name</th><th>units</th><th>dimensions</th><th>shape</th><th>chunks</th><th>dtype</th><th>codecs</th><th>files</th></tr></thead>
<tbody>
{{range .}}<tr class="array" id="array-{{.Name}}">
<td>{{if .Preview}}<a href="{{.Preview}}"><img class="thumb" src="{{.Preview}}" alt="picture of {{.Name}}" loading="lazy"></a>{{end}}</td>
<td data-label="name"><code class="name">{{.Name}}</code></td>
<td data-label="long_name">{{.LongName}}</td>
<td data-label="units">{{.Units}}</td>
<td data-label="dimensions">{{.Dims}}</td>
<td data-label="shape" class="shape">{{.Shape}}</td>
<td data-label="chunks">{{.Chunks}}</td>
<td data-label="dtype"><code>{{.DType}}</code></td>
<td data-label="codecs">{{.Codecs}}</td>
<td data-label="files" class="files">{{range .Files}}<a href="{{.Href}}">{{.Text}}</a> {{end}}{{with .Error}}<div class="error">{{.}}</div>{{end}}</td>
</tr>
{{end}}</tbody>
</table>{{end}}
{{with .Groups}}<h2>Groups</h2>
<ul class="groups">
{{range .}}<li><a href="{{.Href}}">{{.Text}}</a></li>
{{end}}</ul>{{end}}
{{with .Header}}<h2>Header (<a href="./header.cdl">header.cdl</a>)</h2>
<pre class="header">{{.}}</pre>{{end}}
</body>
</html>
`))
