package diskcache

import "github.com/nczarrfs/nczarrfs/zmap"

// FileName returns the dataset folder, shard folder and file name of the
// cache file of the object e describes, for the dataset id.
func FileName(id, key string, e zmap.Entry) (ds, shard, file string) {
	shard, file = name(key, version(e))
	return datasetName(id), shard, file
}

// Encode returns the cache file of data.
func Encode(data []byte) []byte { return append(append([]byte{}, data...), tail(data)...) }

// BlockSize is the size of the blocks whose CRCs are kept.
const BlockSize = blockSize
