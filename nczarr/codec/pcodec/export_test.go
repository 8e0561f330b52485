package pcodec

// EncodeForTest exposes the test encoder to the package's external tests
// (which may import nczarr and fusefs): a stream of one chunk per slice of
// nums, of the number type whose pco byte is code, in float-mult mode of
// base floatBase when floatBase is nonzero, else classic, with consecutive
// delta encoding of the given order (0 for none) and at most bins bins.
func EncodeForTest(code byte, nums [][]uint64, floatBase uint64, order, bins int) []byte {
	t := numTypes[code]
	var chunks []encChunk
	for _, n := range nums {
		c := encChunk{typ: t, nums: n, bins: bins}
		if floatBase != 0 {
			c.mode, c.base = modeFloatMult, floatBase
		}
		if order > 0 {
			c.delta, c.order = deltaConsecutive, order
		}
		chunks = append(chunks, c)
	}
	return encodeStandalone(t.code, chunks...)
}
