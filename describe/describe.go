// Package describe renders what a dataset is: info.json for an array
// (made for jq), the dataset's header as `ncdump -h` prints it
// (header.cdl), each group as a netCDF classic file (dataset.nc, laid
// out by describe/netcdf3, its values read from the arrays), the NumPy
// .npy header that turns an array's decoded bytes into a loadable .npy
// file, and a GDAL raw VRT over them. How Zarr maps to netCDF (types,
// attributes, fills, names) is stated once, in describe/ncmap, which
// header.cdl, dataset.nc and info.json share.
//
// It depends only on package nczarr: the FUSE tree (fusefs) serves these
// as synthesized files, and the nczarrfs info, header, cat and export
// commands make them without a mount.
package describe

import (
	"fmt"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr"
)

// DataDType is the numpy dtype of an array's decoded bytes (its `data`
// file): the stored dtype in little-endian form ("|" for one-byte and
// byte-string types), "|S1" for an NCZarr char. It is "" when the array's
// metadata could not be read.
func DataDType(a *nczarr.Array) string {
	d := a.Meta.DType
	if d.Str == "" {
		return ""
	}
	switch {
	case d.Kind == 'O':
		return "|O" // variable-length: data.json, as numpy's object dtype
	case len(d.Fields) > 0:
		return d.Str // a structured type, as numpy spells its descr
	case d.Kind == 'U' && a.ItemSize == 1:
		return "|S1" // NCZarr char written as "<U1"
	case d.Kind == 'S' || d.Kind == 'V':
		return fmt.Sprintf("|%c%d", d.Kind, d.Size)
	case d.Kind == 'U':
		return fmt.Sprintf("<U%d", d.Size/4)
	case d.Size == 1:
		return "|" + d.Str[1:]
	}
	return "<" + d.Str[1:]
}

// NCType is the netCDF type of an array as netcdf-c reads it: byte,
// ubyte, short, ushort, int, uint, int64, uint64, float, double, char
// (one-byte strings, NCZarr's char) or string (longer fixed-size
// strings). Zarr types netCDF does not have (bool, complex, datetime,
// float16, void) give "".
func NCType(a *nczarr.Array) string {
	d := a.Meta.DType
	switch d.Kind {
	case 'i':
		return map[int]string{1: "byte", 2: "short", 4: "int", 8: "int64"}[d.Size]
	case 'u':
		return map[int]string{1: "ubyte", 2: "ushort", 4: "uint", 8: "uint64"}[d.Size]
	case 'f':
		return map[int]string{4: "float", 8: "double"}[d.Size]
	case 'S':
		if d.Size == 1 {
			return "char"
		}
		return "string"
	case 'U':
		if a.ItemSize == 1 || d.Size == 4 {
			return "char"
		}
		return "string"
	}
	return ""
}

// baseName is the last segment of a key path.
func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}
