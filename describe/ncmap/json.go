package ncmap

import (
	"bytes"
	"encoding/json"
	"strings"
)

// JSONText is a JSON value as netcdf-c writes it back in a char
// attribute: members as `"k": v` joined by ", ", list elements joined
// by "," without space, numbers as written. Text that is no JSON is
// returned as it is.
func JSONText(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' {
				b.WriteByte('{')
				for n := 0; dec.More(); n++ {
					if n > 0 {
						b.WriteString(", ")
					}
					k, err := dec.Token()
					if err != nil {
						return err
					}
					b.WriteString(compact(k))
					b.WriteString(": ")
					if err := walk(); err != nil {
						return err
					}
				}
				b.WriteByte('}')
			} else {
				b.WriteByte('[')
				for n := 0; dec.More(); n++ {
					if n > 0 {
						b.WriteByte(',')
					}
					if err := walk(); err != nil {
						return err
					}
				}
				b.WriteByte(']')
			}
			_, err := dec.Token() // the closing delimiter
			return err
		case json.Number:
			b.WriteString(t.String())
		case nil:
			b.WriteString("null")
		default:
			b.WriteString(compact(t))
		}
		return nil
	}
	if err := walk(); err != nil {
		return string(raw)
	}
	return b.String()
}
