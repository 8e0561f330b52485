// Package zarrmeta parses the documents that describe a Zarr array into
// what the read path needs, and knows nothing of stores and reading: a v2
// .zarray (shape, chunks, data type, order, key separator, filters and
// compressor, fill value), and the parts of a v3 zarr.json that are not
// data types (package dtype): the chunk key encoding and the codec
// pipeline, sharding included. Metadata JSON is decoded as real writers
// produce it (DecodeJSON).
//
// Package nczarr assembles an Array from these parts and reads NCZarr's
// annotations on top of them.
package zarrmeta
