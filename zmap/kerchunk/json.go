package kerchunk

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// MaxJSONSize is the most bytes a JSON reference file may hold, after
// decompression: it is parsed in memory.
const MaxJSONSize = 512 << 20

// MaxRefs is the most references a reference set may hold, gen rules'
// included.
const MaxRefs = 20_000_000

// ErrNoRefs is wrapped by ParseJSON's error for JSON that holds no
// references.
var ErrNoRefs = errors.New("no references")

// Ref is one reference: inline bytes, or a range of the object at URL.
type Ref struct {
	// URL is the referenced object; "" for inline Data.
	URL string
	// Off and Len are the range of the object; Len < 0 is the whole
	// object (a [url] reference).
	Off, Len int64
	// Data holds the bytes of an inline reference.
	Data []byte
}

// Set is a parsed reference set: every key's reference.
type Set map[string]Ref

// Decompress returns data as it is when it is not compressed, or its
// gzip or zstd content (found by the magic numbers), at most max bytes.
func Decompress(data []byte, max int64) ([]byte, error) {
	var r io.Reader
	switch {
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r = zr
	case bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max)+1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		if int64(len(data)) > max {
			return nil, fmt.Errorf("reference file of %d bytes is larger than %d", len(data), max)
		}
		return data, nil
	}
	out, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	if int64(len(out)) > max {
		return nil, fmt.Errorf("reference file decompresses to more than %d bytes", max)
	}
	return out, nil
}

// LooksLikeJSON reports whether data starts like a JSON object,
// compressed with gzip or zstd or not: how a local file is told to be a
// reference file by its content.
func LooksLikeJSON(data []byte) bool {
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) || bytes.HasPrefix(data, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		return true
	}
	data = bytes.TrimLeft(data, " \t\r\n\ufeff")
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	return len(data) > 0 && data[0] == '{'
}

// ParseJSON parses a JSON reference file (version 0 or 1, gzip or zstd
// compressed or not), as fsspec's ReferenceFileSystem reads it: v1's
// templates are expanded in URLs and its gen rules generate keys.
func ParseJSON(data []byte) (Set, error) { return parseJSON(data, MaxRefs) }

func parseJSON(data []byte, maxRefs int) (Set, error) {
	data, err := Decompress(data, MaxJSONSize)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&top); err != nil {
		return nil, fmt.Errorf("not a JSON reference file: %w", err)
	}
	if top == nil {
		return nil, errors.New("not a JSON reference file: not an object")
	}
	refs := top
	var templates map[string]string
	var gens []json.RawMessage
	if v, ok := top["version"]; ok {
		if n, err := strconv.Atoi(string(v)); err != nil || n != 1 {
			return nil, fmt.Errorf("reference file version %s is not 0 or 1", v)
		}
		refs = nil
		if raw, ok := top["refs"]; ok {
			if err := json.Unmarshal(raw, &refs); err != nil {
				return nil, fmt.Errorf(`"refs": %w`, err)
			}
		}
		if raw, ok := top["templates"]; ok {
			if err := json.Unmarshal(raw, &templates); err != nil {
				return nil, fmt.Errorf(`"templates": %w`, err)
			}
		}
		if raw, ok := top["gen"]; ok {
			if err := json.Unmarshal(raw, &gens); err != nil {
				return nil, fmt.Errorf(`"gen": %w`, err)
			}
		}
	}
	if len(refs) > maxRefs {
		return nil, fmt.Errorf("%d references, more than %d", len(refs), maxRefs)
	}
	set := Set{}
	urls := map[string]string{} // interned
	intern := func(u string) string {
		if v, ok := urls[u]; ok {
			return v
		}
		urls[u] = u
		return u
	}
	for _, key := range slices.Sorted(maps.Keys(refs)) {
		if !zmap.ValidKey(key) {
			return nil, fmt.Errorf("reference key %q is not a key", key)
		}
		r, err := parseValue(refs[key], templates)
		if err != nil {
			return nil, fmt.Errorf("reference %q: %w", key, err)
		}
		if r.URL != "" {
			r.URL = intern(r.URL)
		}
		set[key] = r
	}
	for i, raw := range gens {
		if err := expandGen(set, raw, templates, maxRefs, intern); err != nil {
			return nil, fmt.Errorf("gen rule %d: %w", i, err)
		}
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("reference file: %w", ErrNoRefs)
	}
	return set, nil
}

// parseValue reads one reference: a string (base64: for binary), a JSON
// object (its text), [url] or [url, offset, length].
func parseValue(raw json.RawMessage, templates map[string]string) (Ref, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Ref{}, errors.New("empty value")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Ref{}, err
		}
		if b64, ok := strings.CutPrefix(s, "base64:"); ok {
			data, err := decodeBase64(b64)
			if err != nil {
				return Ref{}, err
			}
			return Ref{Data: data, Len: int64(len(data))}, nil
		}
		return Ref{Data: []byte(s), Len: int64(len(s))}, nil
	case '{':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return Ref{}, err
		}
		return Ref{Data: b.Bytes(), Len: int64(b.Len())}, nil
	case '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return Ref{}, err
		}
		if len(parts) != 1 && len(parts) != 3 {
			return Ref{}, fmt.Errorf("a list of %d items, not [url] or [url, offset, length]", len(parts))
		}
		var u string
		if err := json.Unmarshal(parts[0], &u); err != nil || u == "" {
			return Ref{}, fmt.Errorf("URL %s is not a string", parts[0])
		}
		if strings.Contains(u, "{{") {
			var err error
			if u, err = render(u, nil, templates, 0); err != nil {
				return Ref{}, err
			}
		}
		if len(parts) == 1 {
			return Ref{URL: u, Len: -1}, nil
		}
		off, err := parseInt(parts[1])
		if err != nil {
			return Ref{}, fmt.Errorf("offset: %w", err)
		}
		n, err := parseInt(parts[2])
		if err != nil {
			return Ref{}, fmt.Errorf("length: %w", err)
		}
		return checkRange(u, off, n)
	}
	return Ref{}, fmt.Errorf("value %.40s is neither a string, an object nor a list", raw)
}

func checkRange(u string, off, n int64) (Ref, error) {
	if off < 0 || n < 0 || off > 1<<62-n {
		return Ref{}, fmt.Errorf("range %d+%d is not a range", off, n)
	}
	if u == "" {
		return Ref{}, errors.New("empty URL")
	}
	return Ref{URL: u, Off: off, Len: n}, nil
}

// parseInt reads a JSON integer (1000 or 1000.0).
func parseInt(raw json.RawMessage) (int64, error) {
	s := strings.TrimSpace(string(raw))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != float64(int64(f)) || f < -1<<62 || f > 1<<62 {
		return 0, fmt.Errorf("%.40s is not an integer", s)
	}
	return int64(f), nil
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "\n")
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	return b, nil
}

// gen is one v1 gen rule.
type gen struct {
	Key        string                     `json:"key"`
	URL        string                     `json:"url"`
	Offset     *json.RawMessage           `json:"offset"`
	Length     *json.RawMessage           `json:"length"`
	Dimensions map[string]json.RawMessage `json:"dimensions"`
}

// expandGen adds the keys of one gen rule to set: one per member of the
// cartesian product of its dimensions.
func expandGen(set Set, raw json.RawMessage, templates map[string]string, maxRefs int, intern func(string) string) error {
	var g gen
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&g); err != nil {
		return err
	}
	if g.Key == "" || g.URL == "" {
		return errors.New(`"key" and "url" are required`)
	}
	if (g.Offset == nil) != (g.Length == nil) {
		return errors.New(`"offset" and "length" go together`)
	}
	if len(g.Dimensions) == 0 {
		return errors.New(`no "dimensions"`)
	}
	names := slices.Sorted(maps.Keys(g.Dimensions))
	values := make([][]any, len(names))
	total := 1
	for i, name := range names {
		vals, err := dimension(g.Dimensions[name], maxRefs)
		if err != nil {
			return fmt.Errorf("dimension %q: %w", name, err)
		}
		values[i] = vals
		if len(vals) == 0 {
			return nil
		}
		if total > maxRefs/len(vals) {
			return fmt.Errorf("more than %d keys", maxRefs)
		}
		total *= len(vals)
	}
	if len(set) > maxRefs-total {
		return fmt.Errorf("more than %d references", maxRefs)
	}
	offT, lenT := "", ""
	if g.Offset != nil {
		offT, lenT = jsonText(*g.Offset), jsonText(*g.Length)
	}
	idx := make([]int, len(names))
	vars := map[string]any{}
	for {
		for i, name := range names {
			vars[name] = values[i][idx[i]]
		}
		key, err := render(g.Key, vars, templates, 0)
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if !zmap.ValidKey(key) {
			return fmt.Errorf("key %q is not a key", key)
		}
		u, err := render(g.URL, vars, templates, 0)
		if err != nil {
			return fmt.Errorf("url: %w", err)
		}
		r := Ref{URL: intern(u), Len: -1}
		if g.Offset != nil {
			var off, n int64
			if off, err = renderInt(offT, vars, templates); err != nil {
				return fmt.Errorf("offset: %w", err)
			}
			if n, err = renderInt(lenT, vars, templates); err != nil {
				return fmt.Errorf("length: %w", err)
			}
			if r, err = checkRange(r.URL, off, n); err != nil {
				return err
			}
		}
		set[key] = r
		// The next member of the product, the last name fastest.
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(values[i]) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return nil
		}
	}
}

// jsonText is a JSON string's value, or the text of any other JSON value
// (a number).
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

func renderInt(t string, vars map[string]any, templates map[string]string) (int64, error) {
	s, err := render(t, vars, templates, 0)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

// dimension reads a gen dimension: {"start", "stop", "step"} or a list of
// values.
func dimension(raw json.RawMessage, maxRefs int) ([]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		out := make([]any, len(list))
		for i, v := range list {
			if n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
				out[i] = n
				continue
			}
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("value %s is neither an integer nor a string", v)
			}
			out[i] = s
		}
		return out, nil
	}
	var r struct {
		Start *json.Number `json:"start"`
		Stop  *json.Number `json:"stop"`
		Step  *json.Number `json:"step"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Stop == nil {
		return nil, errors.New(`no "stop"`)
	}
	get := func(n *json.Number, def int64) (int64, error) {
		if n == nil {
			return def, nil
		}
		return strconv.ParseInt(n.String(), 10, 64)
	}
	start, err1 := get(r.Start, 0)
	stop, err2 := get(r.Stop, 0)
	step, err3 := get(r.Step, 1)
	if err := errors.Join(err1, err2, err3); err != nil || step == 0 {
		return nil, fmt.Errorf("start, stop and step are not integers with a step other than 0")
	}
	var out []any
	for v := start; step > 0 && v < stop || step < 0 && v > stop; v += step {
		if len(out) >= maxRefs {
			return nil, fmt.Errorf("more than %d values", maxRefs)
		}
		out = append(out, v)
		if step > 0 && v > (1<<62) || step < 0 && v < -(1<<62) {
			break
		}
	}
	return out, nil
}
