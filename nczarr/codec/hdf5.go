package codec

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// HDF5Filter is one entry of the HDF5 filter registry as it relates to
// Zarr: the registered id, HDF5's name for it, and the numcodecs id of the
// same algorithm and chunk format ("" when numcodecs has none).
type HDF5Filter struct {
	ID     int
	Name   string
	Codec  string
	decode string // the registered codec that decodes it, "" when none
}

// hdf5Filters lists the filters NCZarr metadata may name by number: HDF5's
// built-in filters and the registered plugins netcdf-c knows of.
var hdf5Filters = []HDF5Filter{
	{1, "deflate", "zlib", "zlib"},
	{2, "shuffle", "shuffle", "shuffle"},
	{3, "fletcher32", "fletcher32", "fletcher32"},
	{4, "szip", "szip", ""},
	{5, "nbit", "", ""},
	{6, "scaleoffset", "", ""},
	{305, "lzo", "", ""},
	{307, "bzip2", "bz2", "bz2"},
	{32000, "lzf", "", ""},
	{32001, "blosc", "blosc", "blosc"},
	{32002, "mafisc", "", ""},
	{32003, "snappy", "", ""},
	// The HDF5 LZ4 plugin frames its blocks differently from numcodecs'
	// lz4 (big-endian sizes, several blocks), so it has its own decoder.
	{32004, "lz4", "lz4", "hdf5-lz4"},
	{32005, "apax", "", ""},
	{32006, "cbf", "", ""},
	{32007, "jpeg-xr", "", ""},
	{32008, "bitshuffle", "", ""},
	{32009, "spdp", "", ""},
	{32010, "lpc-rice", "", ""},
	{32011, "ccsds-123", "", ""},
	{32012, "jpeg-ls", "", ""},
	{32013, "zfp", "zfpy", ""},
	{32014, "fpzip", "", ""},
	{32015, "zstd", "zstd", "zstd"},
	{32016, "b3d", "", ""},
	{32017, "sz", "", ""},
	{32018, "fcidecomp", "", ""},
	{32019, "jpeg", "", ""},
	{32020, "vbz", "", ""},
	{32021, "fapec", "", ""},
	{32022, "bitgroom", "", ""},
	{32023, "granularbr", "", ""},
	{32024, "sz3", "", ""},
	{32025, "delta-rice", "", ""},
	{32026, "blosc2", "", ""},
	{32027, "flac", "", ""},
	{32028, "sperr", "", ""},
	{32029, "terse-prolix", "", ""},
}

// hdf5FilterByID returns the registry entry of an HDF5 filter id.
func hdf5FilterByID(id int) (HDF5Filter, bool) {
	for _, f := range hdf5Filters {
		if f.ID == id {
			return f, true
		}
	}
	return HDF5Filter{}, false
}

// HDF5ID returns the HDF5 filter id of a numcodecs codec id, or 0.
func HDF5ID(codecID string) int {
	for _, f := range hdf5Filters {
		if f.Codec != "" && f.Codec == codecID {
			return f.ID
		}
	}
	return 0
}

// Describe names the codec an id denotes, whether the id is a numcodecs
// id or an HDF5 filter number: it returns the numcodecs name (HDF5's own
// name when numcodecs has none, the id itself when it is unknown) and the
// HDF5 filter id (0 when there is none).
func Describe(id string) (name string, hdf5 int) {
	if isNumber(id) {
		n, err := strconv.Atoi(id)
		if err != nil {
			return id, 0
		}
		f, ok := hdf5FilterByID(n)
		if !ok {
			return id, n
		}
		if f.Codec != "" {
			return f.Codec, n
		}
		return f.Name, n
	}
	return id, HDF5ID(id)
}

// fromHDF5 turns the configuration of a filter named by its HDF5 number
// into the numcodecs configuration of the codec that decodes it. HDF5
// parameters (an unsigned array under "parameters", as netcdf-c stores
// them) are mapped to numcodecs keys the way netcdf-c's codec plugins do:
// deflate [level], shuffle [elementsize], bzip2 [level], zstd [level].
func fromHDF5(id string, config json.RawMessage, o options) (json.RawMessage, error) {
	n, err := strconv.Atoi(id)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknown, id)
	}
	f, ok := hdf5FilterByID(n)
	if !ok {
		return nil, fmt.Errorf("%w %q (unregistered HDF5 filter id)", ErrUnknown, id)
	}
	if f.decode == "" {
		return nil, fmt.Errorf("%w %q (HDF5 filter %s)", ErrUnknown, id, f.Name)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(config, &m); err != nil {
		return nil, fmt.Errorf("codec configuration %s: %w", config, err)
	}
	params, err := hdf5Params(m)
	if err != nil {
		return nil, fmt.Errorf("HDF5 filter %d: %w", n, err)
	}
	set := func(key string, v any) {
		if _, ok := m[key]; !ok {
			b, _ := json.Marshal(v)
			m[key] = b
		}
	}
	switch f.ID {
	case 1, 307, 32015:
		if len(params) > 0 {
			set("level", params[0])
		}
	case 2:
		if len(params) > 0 {
			set("elementsize", params[0])
		}
		if _, ok := m["elementsize"]; !ok {
			if o.itemSize <= 0 {
				return nil, fmt.Errorf("%w %q: HDF5 shuffle without an element size (pass codec.ItemSize)", ErrUnknown, id)
			}
			set("elementsize", o.itemSize)
		}
	}
	idJSON, _ := json.Marshal(f.decode)
	m["id"] = idJSON
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// hdf5Params reads the HDF5 parameter vector of a configuration, if any.
func hdf5Params(m map[string]json.RawMessage) ([]uint32, error) {
	for _, key := range []string{"parameters", "params", "cd_values"} {
		raw, ok := m[key]
		if !ok {
			continue
		}
		var p []uint32
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("%q is not an array of unsigned integers: %w", key, err)
		}
		return p, nil
	}
	return nil, nil
}
