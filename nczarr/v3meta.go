package nczarr

import (
	"encoding/json"
	"fmt"
)

// The generations of Zarr v3 metadata: plain Zarr v3, and NCZarr's v3
// representation (attributes _nczarr_superblock with format 3,
// _nczarr_group and _nczarr_array inside each zarr.json).
const (
	ZarrV3   Generation = "zarr v3"
	NCZarrV3 Generation = "nczarr v3 (zarr.json attributes)"
)

// v3Doc parses a zarr.json and checks its zarr_format.
func v3Doc(data []byte) (object, error) {
	doc, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	if f, _ := doc["zarr_format"].(json.Number); f != "3" {
		return nil, fmt.Errorf("zarr_format %v is not 3", doc["zarr_format"])
	}
	switch t, _ := doc["node_type"].(string); t {
	case "array", "group":
	default:
		return nil, fmt.Errorf("node_type %q is not array or group", t)
	}
	return doc, nil
}

// nodeType is a zarr.json's node_type, checked by v3Doc.
func (o object) nodeType() string {
	t, _ := o["node_type"].(string)
	return t
}
