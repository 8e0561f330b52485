package chunked

import "encoding/json"

// CodecV3 is one entry of a Zarr v3 array's "codecs" list.
type CodecV3 struct {
	Name          string
	Configuration json.RawMessage // nil when the entry has none
}

// CodecsV3 returns a Zarr v3 array's "codecs" list as stored, in encoding
// order (a sharded array's inner codecs are in the sharding_indexed
// entry's configuration); nil for a Zarr v2 array.
func (a *Array) CodecsV3() []CodecV3 {
	if a.Meta.Format != 3 {
		return nil
	}
	out := make([]CodecV3, len(a.Meta.Codecs))
	for i, c := range a.Meta.Codecs {
		out[i] = CodecV3{Name: c.Name, Configuration: c.Config}
	}
	return out
}
