package nczarr

import (
	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
)

// DType is an array's data type (package dtype).
type DType = dtype.DType

// Field is one field of a structured data type (package dtype).
type Field = dtype.Field

// Meta is an array's checked .zarray, or for Zarr v3 the same facts from
// zarr.json (package zarrmeta).
type Meta = zarrmeta.Meta
