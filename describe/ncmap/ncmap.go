// Package ncmap states, once, how a Zarr hierarchy maps to netCDF: the
// type of each attribute, its values, a variable's _FillValue, which
// names are legal and how an illegal one is escaped, and the names of the
// attributes nczarrfs adds. dataset.nc (describe.NewClassic), header.cdl
// (describe.CDL) and info.json all take their answers from here, so the
// three never disagree.
//
// The rules follow netcdf-c where it is right and depart from it where
// it loses values (docs/tree.md, "dataset.nc"):
//
//   - An attribute with no declared type takes the smallest of byte,
//     short, int and double that holds every element of its list (double
//     when any is not an integer); nothing wraps. bool is byte. Where the
//     format has 64-bit integers (header.cdl, CDF-5), int64 and uint64
//     hold larger integers, else double does when exact; an integer
//     neither holds is left out and reported.
//   - A declared type (NCZarr's _nczarr_attr, _nczarr_attrs) is kept;
//     in a CDF-2 file one that only CDF-5 has is widened: ubyte to short,
//     ushort to int, uint to double, int64 and uint64 to double when every
//     value is exact. Attributes never make a file CDF-5.
//   - _FillValue is the fill the reader serves for a missing chunk,
//     typed as the variable: for pure Zarr (v2, v3) the array's
//     fill_value (none when it is null), for NCZarr the same value when
//     the array has a _FillValue attribute, as netcdf-c shows it.
//   - Names follow netcdf-c's NC_check_name; an illegal one is escaped
//     (Escape) and a variable's original kept in NameAttr.
package ncmap

import "strconv"

// Attributes nczarrfs adds to a classic file.
const (
	// OmittedAttr is the global attribute that names, one per line,
	// what the file leaves out and why.
	OmittedAttr = "nczarrfs_omitted"
	// OmittedAttr2 is OmittedAttr's name when a user attribute of the
	// group already has that one (nczarrfs_omitted3 when that too, and
	// so on).
	OmittedAttr2 = "nczarrfs_omitted2"
	// NameAttr holds, on a variable whose name was escaped or
	// normalized, its name in the Zarr hierarchy.
	NameAttr = "nczarrfs_name"
)

// OmittedName is the name of the report attribute of a group whose
// global attributes are named names.
func OmittedName(names []string) string {
	taken := map[string]bool{}
	for _, n := range names {
		taken[n] = true
	}
	name := OmittedAttr
	for i := 2; taken[name]; i++ {
		name = OmittedAttr + strconv.Itoa(i)
	}
	return name
}
