//go:build !amd64

package shuffle

// unshuffleVector does nothing where there is no vector version: the
// scalar loops do all the elements.
func unshuffleVector(dst, src []byte, count, typesize int) int { return 0 }
