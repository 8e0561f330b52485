package azure

// SetListPageSize sets the MaxResults of List Blobs requests until the
// returned function restores it.
func SetListPageSize(n int32) (restore func()) {
	old := listPageSize
	listPageSize = n
	return func() { listPageSize = old }
}
