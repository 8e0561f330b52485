package chunked

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// maxObjectsJSON bounds the JSON document of an object array, which is
// built whole in memory.
const maxObjectsJSON = 1 << 30

// objects is the state of an array of variable-length objects (dtype
// "|O"). Its elements have no fixed size, so the array has no `data`
// bytes: JSON serves it whole instead.
type objects struct {
	codec string        // the object codec: the first filter's id
	steps []codec.Codec // the byte codecs after it (filters, compressor), in encoding order
	fill  []byte        // fill_value as JSON

	mu  sync.Mutex
	doc []byte // GUARDED_BY(mu); the JSON, once built
}

// objectCodecs are the object codecs nczarrfs decodes, each turning a
// chunk of n elements into one JSON value per element, in the order the
// chunk holds them.
var objectCodecs = map[string]func(src []byte, n int) ([][]byte, error){
	"vlen-utf8":  decodeVLenUTF8,
	"vlen-bytes": decodeVLenBytes,
	"json2":      decodeJSON2,
	"msgpack2":   decodeMsgpack2,
}

// Objects reports whether the array holds variable-length objects (dtype
// "|O", such as variable-length strings). Such an array has no data bytes
// (Size is 0, ReadAt reads nothing): JSON returns its elements.
func (a *Array) Objects() bool { return a.objects != nil }

// JSON returns the elements of an object array as one JSON document, a
// newline at its end: arrays nested by shape (a 0-d array is its one
// element), strings as JSON strings, bytes (vlen-bytes, MessagePack bin)
// as base64 strings, and where no chunk is stored the fill value as
// written in .zarray (null for null). Every chunk is read and decoded on
// the first call, and the document is kept. An array that is not an
// object array, or a chunk that cannot be decoded, is an error.
func (a *Array) JSON(ctx context.Context) ([]byte, error) {
	if a.Err != nil {
		return nil, a.Err
	}
	o := a.objects
	if o == nil {
		return nil, fmt.Errorf("%s: dtype %q is not an object dtype", a.Path, a.Meta.DType.Str)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.doc != nil {
		return o.doc, nil
	}
	doc, err := a.buildJSON(ctx)
	if err != nil {
		return nil, err
	}
	o.doc = doc
	return doc, nil
}

// buildJSON reads every chunk, concurrently, and assembles the document.
func (a *Array) buildJSON(ctx context.Context) ([]byte, error) {
	shape, chunks := a.Meta.Shape, a.Meta.Chunks
	n, _ := product(shape)
	elems := make([][]byte, n) // nil: fill
	grid := make([]int64, len(shape))
	for d := range shape {
		grid[d] = (shape[d] + chunks[d] - 1) / chunks[d]
	}
	nchunks, _ := product(grid)
	if n == 0 {
		nchunks = 0
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, a.src.par)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	var total int64
	for c := int64(0); c < nchunks; c++ {
		idx := unravel(c, grid)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			got, err := a.objectChunk(ctx, idx)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && got != nil {
				err = a.place(elems, got, idx, &total)
			}
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}

	var b bytes.Buffer
	b.Grow(int(total) + 2*len(elems) + 16)
	var write func(d int, off int64)
	stride := make([]int64, len(shape)+1)
	stride[len(shape)] = 1
	for d := len(shape) - 1; d >= 0; d-- {
		stride[d] = stride[d+1] * shape[d]
	}
	write = func(d int, off int64) {
		if d == len(shape) {
			if e := elems[off]; e != nil {
				b.Write(e)
			} else {
				b.Write(a.objects.fill)
			}
			return
		}
		b.WriteByte('[')
		for i := int64(0); i < shape[d]; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			write(d+1, off+i*stride[d+1])
		}
		b.WriteByte(']')
	}
	write(0, 0)
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// unravel turns a C-order position in a grid into its multi-index.
func unravel(pos int64, grid []int64) []int64 {
	idx := make([]int64, len(grid))
	for d := len(grid) - 1; d >= 0; d-- {
		idx[d] = pos % grid[d]
		pos /= grid[d]
	}
	return idx
}

// objectChunk reads and decodes the chunk at grid index idx into one JSON
// value per element, in C order within the chunk; nil when the chunk is
// not stored.
func (a *Array) objectChunk(ctx context.Context, idx []int64) ([][]byte, error) {
	key := a.ChunkKey(idx)
	data, err := a.storedChunk(ctx, key, idx)
	if errors.Is(err, zmap.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, chunkErr(key, err)
	}
	o := a.objects
	for i := len(o.steps) - 1; i >= 0; i-- {
		if data, err = o.steps[i].Decode(nil, data, -1, maxChunkBytes); err != nil {
			return nil, fmt.Errorf("chunk %s: %w", key, err)
		}
	}
	n := int(a.chunkElems)
	elems, err := objectCodecs[o.codec](data, n)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w: %s: %w", key, codec.ErrCorrupt, o.codec, err)
	}
	if len(elems) != n {
		return nil, fmt.Errorf("chunk %s: %w: %s holds %d elements, want %d", key, codec.ErrCorrupt, o.codec, len(elems), n)
	}
	if a.Meta.Order == 'F' && len(a.Meta.Chunks) > 1 {
		// vlen codecs store the elements in the chunk's memory order.
		// json2 and msgpack2 nest them by index, but zarr-python 2 flattens
		// what they decode in C order and then reshapes it in Fortran
		// order, so that it reads them transposed within the chunk: do as
		// the reference reader does.
		elems = fortranElemsToC(elems, a.Meta.Chunks)
	}
	return elems, nil
}

// storedChunk returns the stored bytes of the chunk key (grid index idx):
// the object, or of a sharded array the inner chunk's bytes in its shard,
// which the shard's index locates. A chunk that is not stored is
// zmap.ErrNotFound.
func (a *Array) storedChunk(ctx context.Context, key string, idx []int64) ([]byte, error) {
	if !a.sharded() {
		return a.getBounded(ctx, key, a.src.raise(ElemsBound))
	}
	shard, _, err := parseInnerKey(key, len(idx))
	if err != nil {
		return nil, err
	}
	r, leaf, ok, err := a.locateInner(ctx, shard, idx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, zmap.ErrNotFound
	}
	if err := checkBound(key, r.n, a.innerBound(leaf)); err != nil {
		return nil, fmt.Errorf("%w: %w", codec.ErrCorrupt, err)
	}
	data := make([]byte, r.n)
	if err := a.readRegion(ctx, r.key, data, r.off); err != nil {
		return nil, fmt.Errorf("%d bytes at %d: %w", r.n, r.off, err)
	}
	return data, nil
}

// fortranElemsToC reorders the elements of a chunk from Fortran to C order.
func fortranElemsToC(elems [][]byte, shape []int64) [][]byte {
	out := make([][]byte, len(elems))
	rank := len(shape)
	idx := make([]int64, rank)
	for c := range out {
		rem := int64(c)
		for d := rank - 1; d >= 0; d-- {
			idx[d] = rem % shape[d]
			rem /= shape[d]
		}
		f := int64(0)
		for d := rank - 1; d >= 0; d-- {
			f = f*shape[d] + idx[d]
		}
		out[c] = elems[f]
	}
	return out
}

// place copies the elements of the chunk at grid index idx that lie inside
// the array into elems, its C-order elements.
func (a *Array) place(elems [][]byte, chunk [][]byte, idx []int64, total *int64) error {
	shape, chunks := a.Meta.Shape, a.Meta.Chunks
	rank := len(shape)
	within := make([]int64, rank)
	for c := range chunk {
		rem := int64(c)
		for d := rank - 1; d >= 0; d-- {
			within[d] = rem % chunks[d]
			rem /= chunks[d]
		}
		pos, inside := int64(0), true
		for d := 0; d < rank; d++ {
			x := idx[d]*chunks[d] + within[d]
			if x >= shape[d] {
				inside = false
				break
			}
			pos = pos*shape[d] + x
		}
		if !inside {
			continue
		}
		elems[pos] = chunk[c]
		if *total += int64(len(chunk[c])); *total > maxObjectsJSON {
			return fmt.Errorf("%s: the JSON of the array exceeds %d bytes", a.Path, maxObjectsJSON)
		}
	}
	return nil
}

// vlenItems splits numcodecs' VLenUTF8/VLenBytes encoding: the number of
// items, then each item's length and bytes, all lengths uint32
// little-endian.
func vlenItems(src []byte, n int) ([][]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("%d bytes hold no header", len(src))
	}
	count := binary.LittleEndian.Uint32(src)
	if int64(count) != int64(n) {
		return nil, fmt.Errorf("%d items, want %d", count, n)
	}
	items := make([][]byte, n)
	p := src[4:]
	for i := range items {
		if len(p) < 4 {
			return nil, fmt.Errorf("item %d: truncated", i)
		}
		l := binary.LittleEndian.Uint32(p)
		p = p[4:]
		if uint64(l) > uint64(len(p)) {
			return nil, fmt.Errorf("item %d: %d bytes, %d left", i, l, len(p))
		}
		items[i], p = p[:l], p[l:]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%d bytes after the last item", len(p))
	}
	return items, nil
}

func decodeVLenUTF8(src []byte, n int) ([][]byte, error) {
	items, err := vlenItems(src, n)
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		if !utf8.Valid(it) {
			return nil, fmt.Errorf("item %d is not UTF-8", i)
		}
		items[i] = jsonString(string(it))
	}
	return items, nil
}

func decodeVLenBytes(src []byte, n int) ([][]byte, error) {
	items, err := vlenItems(src, n)
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		items[i] = jsonString(base64.StdEncoding.EncodeToString(it))
	}
	return items, nil
}

// jsonString encodes s as a JSON string, leaving <, > and & as they are.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// decodeJSON2 reads numcodecs' JSON codec: a JSON list of the elements
// nested by the chunk's shape, then its dtype and its shape.
func decodeJSON2(src []byte, n int) ([][]byte, error) {
	var items []any
	if err := zarrmeta.DecodeJSON(src, &items); err != nil {
		return nil, err
	}
	return nestedItems(items, n)
}

// decodeMsgpack2 reads numcodecs' MsgPack codec, laid out as decodeJSON2's.
func decodeMsgpack2(src []byte, n int) ([][]byte, error) {
	v, err := decodeMsgpack(src)
	if err != nil {
		return nil, err
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("not a list")
	}
	return nestedItems(items, n)
}

// nestedItems flattens [elements nested by shape..., dtype, shape] into
// one JSON value per element, in C order.
func nestedItems(items []any, n int) ([][]byte, error) {
	if len(items) < 2 {
		return nil, fmt.Errorf("%d items hold no dtype and shape", len(items))
	}
	shapeList, ok := items[len(items)-1].([]any)
	if !ok {
		return nil, fmt.Errorf("no shape after the elements")
	}
	rank := len(shapeList)
	var out [][]byte
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		if depth == rank {
			if len(out) >= n {
				return fmt.Errorf("more than %d elements", n)
			}
			b, err := jsonValue(v)
			if err != nil {
				return err
			}
			out = append(out, b)
			return nil
		}
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("elements are not nested %d deep", rank)
		}
		for _, e := range list {
			if err := walk(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	elems := items[:len(items)-2]
	if rank == 0 {
		if len(elems) != 1 {
			return nil, fmt.Errorf("%d elements for shape []", len(elems))
		}
		return out, walk(elems[0], 0)
	}
	for _, e := range elems {
		if err := walk(e, 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jsonValue encodes a decoded JSON or MessagePack value: bytes as base64
// strings, maps with their keys sorted, non-finite floats as the strings "NaN", "Infinity" and
// "-Infinity" that Zarr metadata uses.
func jsonValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return jsonString(x), nil
	case []byte:
		return jsonString(base64.StdEncoding.EncodeToString(x)), nil
	case float64:
		switch {
		case math.IsNaN(x):
			return jsonString("NaN"), nil
		case math.IsInf(x, 1):
			return jsonString("Infinity"), nil
		case math.IsInf(x, -1):
			return jsonString("-Infinity"), nil
		}
		return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
	case []any:
		var b bytes.Buffer
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			eb, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			b.Write(eb)
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		var b bytes.Buffer
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonString(k))
			b.WriteByte(':')
			eb, err := jsonValue(x[k])
			if err != nil {
				return nil, err
			}
			b.Write(eb)
		}
		b.WriteByte('}')
		return b.Bytes(), nil
	}
	return json.Marshal(v)
}
