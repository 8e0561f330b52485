package zarrmeta

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Member is one name/value pair of a JSON object, the value's bytes as
// stored: a bare NaN or Infinity (which zarr-python writes) can still be
// told from the string "NaN", and 1.0 from 1.
type Member struct {
	Name  string
	Value json.RawMessage
}

// Members parses a JSON object keeping its members' order, which a Go map
// loses and netcdf-c keeps (attributes, dimensions).
func Members(data []byte) ([]Member, error) {
	if !json.Valid(QuoteNonFinite(data)) {
		return nil, errors.New("invalid JSON")
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []Member
	for i = skipSpace(data, i+1); i < len(data) && data[i] != '}'; {
		end := valueEnd(data, i)
		var name string
		if err := json.Unmarshal(data[i:end], &name); err != nil {
			return nil, err
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, errors.New("invalid JSON object")
		}
		i = skipSpace(data, i+1)
		end = valueEnd(data, i)
		out = append(out, Member{name, data[i:end:end]})
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return out, nil
}

// Lookup returns the value of the member named name, any case.
func Lookup(ms []Member, name string) (json.RawMessage, bool) {
	for _, m := range ms {
		if strings.EqualFold(m.Name, name) {
			return m.Value, true
		}
	}
	return nil, false
}

// ParseAttrs reads a v2 .zattrs object: the attributes in stored order.
// nil data (no .zattrs) is no attributes.
func ParseAttrs(zattrs []byte) ([]Member, error) {
	if zattrs == nil {
		return nil, nil
	}
	ms, err := Members(zattrs)
	if err != nil {
		return nil, fmt.Errorf(".zattrs: %w", err)
	}
	return ms, nil
}

// ParseAttrsV3 reads the "attributes" member of a v3 zarr.json document,
// in stored order; none when it is absent or null, or data is nil.
func ParseAttrsV3(zarrJSON []byte) ([]Member, error) {
	if zarrJSON == nil {
		return nil, nil
	}
	doc, err := Members(zarrJSON)
	if err != nil {
		return nil, fmt.Errorf("zarr.json: %w", err)
	}
	raw, ok := Lookup(doc, "attributes")
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	ms, err := Members(raw)
	if err != nil {
		return nil, fmt.Errorf("zarr.json attributes: %w", err)
	}
	return ms, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value starting at data[i] (valid
// JSON): the first ',', '}' or ']' outside it, or whitespace after it.
func valueEnd(data []byte, i int) int {
	depth := 0
	inString, escaped := false, false
	for ; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 0 {
					return i + 1
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
