package nczarr

// The tests open and read arrays of every codec.
import _ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
