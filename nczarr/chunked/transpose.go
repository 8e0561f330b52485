package chunked

import "github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"

// untranspose undoes a chunk's transpose codecs (perms in encoding order)
// and returns the chunk, of shape shape, in C order.
func untranspose(src []byte, shape []int64, perms [][]int, is int) []byte {
	shapes := [][]int64{shape}
	for _, p := range perms {
		shapes = append(shapes, zarrmeta.Permute(shapes[len(shapes)-1], p))
	}
	for k := len(perms) - 1; k >= 0; k-- {
		src = transposeBack(src, shapes[k], perms[k], is)
	}
	return src
}

// transposeBack turns src, the C-order bytes of the array of shape
// zarrmeta.Permute(shape, perm), into the C-order bytes of the array of shape
// shape whose element i is src's element j with j[k] = i[perm[k]].
func transposeBack(src []byte, shape []int64, perm []int, is int) []byte {
	rank := len(shape)
	enc := zarrmeta.Permute(shape, perm)
	// C strides of the encoded array, in elements, by decoded axis.
	stride := make([]int64, rank)
	s := int64(1)
	for k := rank - 1; k >= 0; k-- {
		stride[perm[k]] = s
		s *= enc[k]
	}
	dst := make([]byte, len(src))
	idx := make([]int64, rank)
	for c := int64(0); c < s; c++ {
		f := int64(0)
		for d := range rank {
			f += idx[d] * stride[d]
		}
		copy(dst[c*int64(is):(c+1)*int64(is)], src[f*int64(is):(f+1)*int64(is)])
		for d := rank - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return dst
}
