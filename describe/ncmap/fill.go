package ncmap

import (
	"fmt"

	"github.com/nczarrfs/nczarrfs/describe/netcdf3"
	"github.com/nczarrfs/nczarrfs/nczarr"
)

// FillAttr is the name of netCDF's fill value attribute.
const FillAttr = "_FillValue"

// Pure reports whether a dataset of generation g is pure Zarr (v2 or
// v3), whose fill value is its arrays' fill_value, not an attribute.
func Pure(g nczarr.Generation) bool { return g == nczarr.PureZarr || g == nczarr.ZarrV3 }

// Fill is the _FillValue of array a as a variable of type t: the fill
// the reader serves where no chunk is stored, in t's big-endian form.
// For pure Zarr it is the array's fill_value (none for null); for NCZarr
// it is there when the array has a _FillValue attribute (userFill, nil
// for none), as netcdf-c shows it, with the array's fill_value when it
// has one (what the reader serves), else the attribute's value. ok is
// false when there is none; why says why a fill that exists has no form
// in t.
func Fill(g nczarr.Generation, a *nczarr.Array, t netcdf3.Type, userFill *nczarr.Attr) (attr netcdf3.Attr, ok bool, why string) {
	var v any
	switch {
	case Pure(g):
		if a.Meta.Fill == nil {
			return netcdf3.Attr{}, false, ""
		}
		v = a.Meta.Fill
	case userFill == nil:
		return netcdf3.Attr{}, false, ""
	case a.Meta.HasFill && a.Meta.Fill != nil:
		v = a.Meta.Fill
	default:
		var err error
		if v, err = Decode(userFill.Value); err != nil {
			return netcdf3.Attr{}, false, "its value is not JSON"
		}
	}
	if t.Size() == 0 || a.ItemSize != t.Size() {
		return netcdf3.Attr{}, false, fmt.Sprintf("elements of %d bytes have no fill of type %s", a.ItemSize, t)
	}
	b, err := a.Meta.EncodeFill(v, a.ItemSize)
	if err != nil || len(b) != t.Size() {
		return netcdf3.Attr{}, false, fmt.Sprintf("fill value %s has no form of type %s", compact(v), t)
	}
	// b is the value as data holds it: little-endian.
	be := make([]byte, len(b))
	for i := range b {
		be[i] = b[len(b)-1-i]
	}
	return netcdf3.Attr{Name: FillAttr, Type: t, Values: be}, true, ""
}
