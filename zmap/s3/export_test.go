package s3

// SetListPageSize sets the ListObjectsV2 page size until the returned
// function restores it, so that tests make long listings of few keys.
func SetListPageSize(n int32) (restore func()) {
	old := listPageSize
	listPageSize = n
	return func() { listPageSize = old }
}

// DecodeListV2 and DecodeListsFast expose the ListObjectsV2 decoder.
var (
	DecodeListV2    = decodeListV2
	DecodeListsFast = decodeListsFast
)
