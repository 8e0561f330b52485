package zarrmeta

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodeJSON parses metadata the way real writers produce it: numbers are
// kept as json.Number (integers beyond 2^53 stay exact) and the bare tokens
// NaN, Infinity and -Infinity, which zarr-python writes into .zattrs and
// encoding/json rejects, are read as the strings "NaN", "Infinity" and
// "-Infinity".
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(QuoteNonFinite(data)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}

// QuoteNonFinite returns data with every bare NaN, Infinity or -Infinity
// token outside a string replaced by the same word in quotes. Data without
// such tokens is returned unchanged, without a copy.
func QuoteNonFinite(data []byte) []byte {
	var out []byte // nil until the first replacement
	last := 0
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		var word string
		switch {
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			word = "NaN"
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			word = "-Infinity"
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			word = "Infinity"
		default:
			continue
		}
		out = append(out, data[last:i]...)
		out = append(out, '"')
		out = append(out, word...)
		out = append(out, '"')
		i += len(word) - 1
		last = i + 1
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
