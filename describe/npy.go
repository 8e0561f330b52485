package describe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr"
)

// npyAlign is the boundary the .npy header is padded to, so that the data
// after it stays aligned for memory mapping (numpy pads to 64 too).
const npyAlign = 64

// NPYHeader returns the NumPy .npy header for an array's decoded bytes:
// magic, version, and the header dict padded with spaces to a multiple of
// 64 bytes. The header followed by the array's `data` is a .npy file that
// numpy.load reads, memory-mapped too. Version 1.0 is used unless the
// dict needs more than 65535 bytes (a shape of thousands of dimensions),
// then 2.0. An NCZarr scalar and a 0-d array have shape ().
func NPYHeader(a *nczarr.Array) ([]byte, error) {
	descr := DataDType(a)
	if descr == "" {
		if a.Err != nil {
			return nil, a.Err
		}
		return nil, errors.New("array has no dtype")
	}
	var shape strings.Builder
	shape.WriteByte('(')
	if !a.Scalar {
		for i, n := range a.Meta.Shape {
			if i > 0 {
				shape.WriteString(", ")
			}
			shape.WriteString(strconv.FormatInt(n, 10))
		}
		if len(a.Meta.Shape) == 1 {
			shape.WriteByte(',')
		}
	}
	shape.WriteByte(')')
	if !strings.HasPrefix(descr, "[") {
		descr = "'" + descr + "'" // a structured descr is a list, unquoted
	}
	dict := fmt.Sprintf("{'descr': %s, 'fortran_order': False, 'shape': %s, }", descr, shape.String())

	// magic(6) + version(2) + length(2, or 4 from version 2.0) + dict +
	// padding + '\n', to a multiple of npyAlign.
	version, pre := byte(1), 10
	total := align(pre + len(dict) + 1)
	if total-pre > 0xffff {
		version, pre = 2, 12
		total = align(pre + len(dict) + 1)
	}
	h := make([]byte, 0, total)
	h = append(h, "\x93NUMPY"...)
	h = append(h, version, 0)
	if version == 1 {
		h = binary.LittleEndian.AppendUint16(h, uint16(total-pre))
	} else {
		h = binary.LittleEndian.AppendUint32(h, uint32(total-pre))
	}
	h = append(h, dict...)
	for len(h) < total-1 {
		h = append(h, ' ')
	}
	return append(h, '\n'), nil
}

// align rounds n up to a multiple of npyAlign.
func align(n int) int { return (n + npyAlign - 1) / npyAlign * npyAlign }
