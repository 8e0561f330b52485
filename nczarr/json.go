package nczarr

import "github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"

// decodeJSON is zarrmeta.DecodeJSON: metadata as real writers produce it.
func decodeJSON(data []byte, v any) error { return zarrmeta.DecodeJSON(data, v) }
