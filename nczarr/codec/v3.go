package codec

import (
	"encoding/json"
	"fmt"
	"strings"
)

// V3Config turns a Zarr v3 bytes-to-bytes codec, named name with the
// "configuration" object config (nil for none), into the numcodecs-style
// configuration the registry takes: the configuration's members plus "id".
//
// The v3 codecs gzip, zstd, blosc and crc32c keep their names; the
// "numcodecs.*" names that zarr-python writes for v2 codecs in v3 metadata
// lose their prefix. Blosc's v3 shuffle names become numcodecs' numbers.
func V3Config(name string, config json.RawMessage) (json.RawMessage, error) {
	id := strings.TrimPrefix(name, "numcodecs.")
	m := map[string]any{}
	if len(config) > 0 && string(config) != "null" {
		if err := json.Unmarshal(config, &m); err != nil || m == nil {
			return nil, fmt.Errorf("codec %q: configuration %s is not an object", name, config)
		}
	}
	if id == "blosc" {
		if s, ok := m["shuffle"].(string); ok {
			n, known := map[string]int{"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[s]
			if !known {
				return nil, fmt.Errorf("codec %q: unknown shuffle %q", name, s)
			}
			m["shuffle"] = n
		}
	}
	m["id"] = id
	return json.Marshal(m)
}
