package nczarr

import (
	"github.com/nczarrfs/nczarrfs/nczarr/chunked"
	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
)

// DType is an array's data type (package dtype).
type DType = dtype.DType

// Field is one field of a structured data type (package dtype).
type Field = dtype.Field

// Meta is an array's metadata model, whichever Zarr version wrote it
// (package zarrmeta).
type Meta = zarrmeta.Array

// Array is an array of the dataset (package chunked reads it).
type Array = chunked.Array

// Reader reads an array's decoded bytes for one consumer, with read-ahead
// (package chunked).
type Reader = chunked.Reader

// CodecV3 is one entry of a Zarr v3 array's "codecs" list (package chunked).
type CodecV3 = chunked.CodecV3
