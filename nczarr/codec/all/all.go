// Package all registers every codec of the codec engine. Import it for its
// side effect:
//
//	import _ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
package all

import (
	// Each package registers its codecs from init.
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/blosc"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/compressors"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/filters"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/pcodec"
)
