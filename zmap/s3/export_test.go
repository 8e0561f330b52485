package s3

// SetListPageSize sets the ListObjectsV2 page size until the returned
// function restores it, so that tests make long listings of few keys.
func SetListPageSize(n int32) (restore func()) {
	old := listPageSize
	listPageSize = n
	return func() { listPageSize = old }
}
