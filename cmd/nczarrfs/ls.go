package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/describe"
	"github.com/nczarrfs/nczarrfs/nczarr"
)

func lsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Usage:     "list a group's groups and arrays without mounting",
		ArgsUsage: "SOURCE [PATH]",
		Description: `Lists the groups (with a trailing /) and arrays of the group at PATH (the
root by default), one a line: name, dtype of data, shape, dimension names, and
why the array cannot be read, if it cannot. PATH naming an array lists that
array. --json prints the same as a JSON list.

Examples:
   nczarrfs ls /data/run42.zip
   nczarrfs ls -R --json s3://bucket/run42 | jq -r '.[] | select(.kind=="array") | .path'`,
		Flags: append(sourceFlags(),
			&cli.BoolFlag{Name: "json", Usage: "print a JSON list"},
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"R"}, Usage: "list subgroups too, by full path"},
		),
		Action: runLs,
	}
}

// lsEntry is one line of ls.
type lsEntry struct {
	Name       string   `json:"name"`
	Path       string   `json:"path"`
	Kind       string   `json:"kind"` // "group" or "array"
	DType      string   `json:"dtype,omitempty"`
	Shape      []int64  `json:"shape,omitempty"`
	Dimensions []string `json:"dimensions,omitempty"`
	Error      string   `json:"error,omitempty"`
}

func runLs(c *cli.Context) error {
	if c.NArg() < 1 || c.NArg() > 2 {
		return fmt.Errorf("ls needs SOURCE and at most one PATH (got %d arguments); see nczarrfs ls --help", c.NArg())
	}
	ctx, cancel := signalContext()
	defer cancel()
	ds, store, err := openDataset(ctx, c, c.Args().Get(0))
	if err != nil {
		return err
	}
	defer store.Close()
	icechunkNote(ctx, c.App.ErrWriter, store, false)

	p := arrayPath(c.Args().Get(1))
	var entries []lsEntry
	switch {
	case ds.Array(p) != nil:
		entries = append(entries, arrayEntry(ds.Array(p), p))
	case ds.Group(p) != nil:
		entries = listGroup(ds, p, p, c.Bool("recursive"))
	default:
		return fmt.Errorf("%s: no such group or array", c.Args().Get(1))
	}

	if c.Bool("json") {
		if entries == nil {
			entries = []lsEntry{}
		}
		enc := json.NewEncoder(c.App.Writer)
		enc.SetEscapeHTML(false) // dtypes such as "<f4" as they are
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 8, 2, ' ', 0)
	for _, e := range entries {
		if e.Kind == "group" {
			fmt.Fprintf(tw, "%s/\n", e.Name)
			continue
		}
		shape := make([]string, len(e.Shape))
		for i, n := range e.Shape {
			shape[i] = strconv.FormatInt(n, 10)
		}
		line := fmt.Sprintf("%s\t%s\t[%s]\t%s", e.Name, e.DType, strings.Join(shape, ", "), strings.Join(e.Dimensions, ", "))
		if e.Error != "" {
			line += "\terror: " + e.Error
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// listGroup lists the group at p: its groups, then its arrays, named
// relative to base; recursive lists each subgroup's content after it.
func listGroup(ds *nczarr.Dataset, p, base string, recursive bool) []lsEntry {
	g := ds.Group(p)
	var out []lsEntry
	for _, sub := range g.Groups {
		out = append(out, lsEntry{Name: rel(sub, base), Path: "/" + sub, Kind: "group"})
		if recursive {
			out = append(out, listGroup(ds, sub, base, true)...)
		}
	}
	for _, a := range g.Arrays {
		e := arrayEntry(ds.Array(a), a)
		e.Name = rel(a, base)
		out = append(out, e)
	}
	return out
}

func arrayEntry(a *nczarr.Array, p string) lsEntry {
	e := lsEntry{Name: p[strings.LastIndexByte(p, '/')+1:], Path: "/" + p, Kind: "array",
		DType: describe.DataDType(a), Shape: a.Meta.Shape}
	if !a.Scalar {
		e.Dimensions = a.DimNames
	} else {
		e.Shape = nil
	}
	if a.Err != nil {
		e.Error = a.Err.Error()
	}
	return e
}

// rel names key relative to the group base.
func rel(key, base string) string {
	if base == "" {
		return key
	}
	return strings.TrimPrefix(key, base+"/")
}
