//go:build !linux

package diskcache

// openBeneath opens shard/name in dir following no link.
func openBeneath(dir int, shard, name string, flags int) (int, error) {
	return openChain(dir, shard, name, flags)
}
