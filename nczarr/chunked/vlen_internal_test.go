package chunked

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
)

// TestObjectCodecErrors feeds each object codec chunks that are cut short
// or hold the wrong number of items: each is an error, never a panic.
func TestObjectCodecErrors(t *testing.T) {
	tests := []struct {
		codec string
		src   string
		n     int
		want  string
	}{
		{"vlen-utf8", "", 1, "no header"},
		{"vlen-utf8", "\x02\x00\x00\x00", 1, "2 items, want 1"},
		{"vlen-utf8", "\x01\x00\x00\x00\x05\x00\x00\x00ab", 1, "5 bytes, 2 left"},
		{"vlen-utf8", "\x01\x00\x00\x00\x01\x00\x00\x00\xff", 1, "not UTF-8"},
		{"vlen-utf8", "\x01\x00\x00\x00\x01\x00\x00\x00ab", 1, "after the last item"},
		{"vlen-bytes", "\x01\x00\x00\x00\x01\x00", 1, "truncated"},
		{"json2", `["a"]`, 1, "no dtype and shape"},
		{"json2", `["a","|O",[1]`, 1, "unexpected EOF"},
		{"json2", `["a","b","|O",[1]]`, 1, "more than 1 elements"},
		{"json2", `["a","|O",[1,1]]`, 1, "not nested 2 deep"},
		{"json2", `["a","|O",3]`, 1, "no shape"},
		{"msgpack2", "\x93\xa1a\xa2|O", 1, "truncated"},
		{"msgpack2", "\xc7\x01\x01\x00", 1, "not supported"},
		{"msgpack2", "\x93\x81\x01\x02\xa2|O\x91\x01", 1, "not a string"},
		{"msgpack2", "\xdd\xff\xff\xff\xff", 1, "array of"},
		{"msgpack2", "\x93\xa1a\xa2|O\x91\x01\x00", 1, "after the value"},
		{"msgpack2", "\xa1a", 1, "not a list"},
	}
	for _, tt := range tests {
		_, err := objectCodecs[tt.codec]([]byte(tt.src), tt.n)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s(%q, %d) error %v, want one saying %q", tt.codec, tt.src, tt.n, err, tt.want)
		}
	}
}

// TestMsgpackDepth checks that deeply nested MessagePack arrays are refused
// rather than recursed into without bound.
func TestMsgpackDepth(t *testing.T) {
	src := strings.Repeat("\x91", 10000) + "\xc0"
	if _, err := decodeMsgpack([]byte(src)); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("10000 nested arrays: %v, want a nesting error", err)
	}
}

// FuzzObjectCodecs checks that no chunk makes an object codec panic, and
// that what one accepts is n valid JSON values.
func FuzzObjectCodecs(f *testing.F) {
	f.Add(uint8(0), []byte("\x02\x00\x00\x00\x01\x00\x00\x00a\x00\x00\x00\x00"), uint8(2))
	f.Add(uint8(1), []byte("\x01\x00\x00\x00\x02\x00\x00\x00\x00\xff"), uint8(1))
	f.Add(uint8(2), []byte(`[["a",1],[null,NaN],"|O",[2,2]]`), uint8(4))
	f.Add(uint8(3), []byte("\x94\xa1a\xc4\x01\xff\xa2|O\x91\x02"), uint8(2))
	names := []string{"vlen-utf8", "vlen-bytes", "json2", "msgpack2"}
	f.Fuzz(func(t *testing.T, which uint8, src []byte, n uint8) {
		name := names[int(which)%len(names)]
		elems, err := objectCodecs[name](src, int(n))
		if err != nil {
			return
		}
		if len(elems) > int(n) {
			t.Fatalf("%s: %d elements, want at most %d", name, len(elems), n)
		}
		for i, e := range elems {
			if !json.Valid(e) {
				t.Fatalf("%s: element %d is not JSON: %q", name, i, e)
			}
		}
	})
}

// TestEveryElemCodecDecodes checks that every element codec the model
// parsers accept (zarrmeta.ElemCodecs) has a decoder here, and no other.
func TestEveryElemCodecDecodes(t *testing.T) {
	for _, id := range zarrmeta.ElemCodecs {
		if objectCodecs[id] == nil {
			t.Errorf("element codec %q has no decoder", id)
		}
	}
	if len(objectCodecs) != len(zarrmeta.ElemCodecs) {
		t.Errorf("%d decoders for %d element codecs", len(objectCodecs), len(zarrmeta.ElemCodecs))
	}
}
