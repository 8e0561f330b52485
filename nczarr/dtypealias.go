package nczarr

import "github.com/nczarrfs/nczarrfs/nczarr/dtype"

// DType is an array's data type (package dtype).
type DType = dtype.DType

// Field is one field of a structured data type (package dtype).
type Field = dtype.Field
