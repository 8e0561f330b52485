// Package zarrmeta is the metadata model of a Zarr array, whichever
// version of the format wrote it (Array), and one parser per version that
// fills it: ParseV2 from a .zarray and its .zattrs, ParseV3 from a
// zarr.json. The model holds the shape, the chunks and chunk grid, the
// chunk key encoding, the data type (package dtype), the fill value, the
// codec pipeline (transposes, an array-to-bytes codec that may be
// sharding_indexed or an element codec, bytes-to-bytes codecs; a v2
// array's order, byte order, filters and compressor become one), the
// dimension names and the attributes. Metadata JSON is decoded as real
// writers produce it (DecodeJSON). The package knows nothing of stores and
// reading.
//
// Package nczarr reads NCZarr's annotations on top of the model and
// builds an Array and its read path from it.
package zarrmeta
