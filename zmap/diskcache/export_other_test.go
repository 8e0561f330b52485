//go:build !linux

package diskcache

// UseOpenat2 does nothing where there is no openat2(2).
func UseOpenat2(on bool) bool { return false }
