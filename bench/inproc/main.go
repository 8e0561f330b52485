// Command inproc times nczarrfs's read path without FUSE, for bench/run.py.
//
//	inproc [flags] read   SOURCE ARRAY     whole array, in -req sequential ReadAt calls
//	inproc [flags] slice  SOURCE ARRAY T   the 2-D slice ARRAY[T] of a 3-D array, one ReadAt
//	inproc [flags] decode SOURCE ARRAY     the decoders alone: every stored chunk read into
//	                                       memory first, then all decoded by -workers goroutines
//
// SOURCE is what nczarrfs mount takes; S3 endpoints and credentials come
// from the environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...), as for
// the daemon. The store and dataset are opened with the project's packages
// and a cache of -cache-size bytes, as a mount does, before the clock
// starts. It prints one JSON object: the seconds timed and the bytes
// produced, and for decode the chunk count, the summed per-chunk decode
// time and how many chunks one step of the first dimension touches.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all" // every codec a mount decodes
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// result is what one run prints.
type result struct {
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	// For decode only.
	Chunks       int     `json:"chunks,omitempty"`
	ChunkSeconds float64 `json:"chunk_seconds,omitempty"` // decode time summed over chunks
	RowChunks    int     `json:"row_chunks,omitempty"`    // chunks per index of dimension 0
}

func main() {
	req := flag.Int("req", 1<<20, "request size of read, in bytes")
	cacheSize := flag.Int64("cache-size", 256<<20, "decoded-chunk cache budget, in bytes (the mount's default)")
	workers := flag.Int("workers", 2, "decoding goroutines of decode")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: inproc [flags] read|slice|decode SOURCE ARRAY [T]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 3 {
		flag.Usage()
		os.Exit(2)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "inproc:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(context.Background(), flag.Args(), *req, *cacheSize, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "inproc:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, req int, cacheSize int64, workers int) error {
	mode, src, name := args[0], args[1], args[2]
	parsed, err := source.Parse(src)
	if err != nil {
		return err
	}
	store, err := source.Open(ctx, parsed, source.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	ds, err := nczarr.Open(ctx, store, nczarr.Options{Cache: cache.New(cacheSize)})
	if err != nil {
		return err
	}
	a := ds.Array(name)
	if a == nil {
		return fmt.Errorf("%s: no array %q", src, name)
	}
	if a.Err != nil {
		return a.Err
	}
	var r result
	switch mode {
	case "read":
		r, err = readAll(ctx, a, req)
	case "slice":
		if len(args) < 4 {
			return errors.New("slice needs T")
		}
		t, err2 := strconv.ParseInt(args[3], 10, 64)
		if err2 != nil {
			return err2
		}
		r, err = readSlice(ctx, a, t)
	case "decode":
		r, err = decodeAll(ctx, store, a, workers)
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// readAll reads the whole array front to back in requests of req bytes.
func readAll(ctx context.Context, a *nczarr.Array, req int) (result, error) {
	buf := make([]byte, req)
	r := a.NewReader() // as an open data file reads: with read-ahead
	start := time.Now()
	var total int64
	for off := int64(0); off < a.Size(); {
		n, err := r.ReadAt(ctx, buf, off)
		total += int64(n)
		off += int64(n)
		if err == io.EOF && off >= a.Size() {
			break
		}
		if err != nil {
			return result{}, fmt.Errorf("read at %d: %w", off, err)
		}
	}
	return result{Seconds: time.Since(start).Seconds(), Bytes: total}, nil
}

// readSlice reads ARRAY[t] of an array of rank 2 or more in one ReadAt.
func readSlice(ctx context.Context, a *nczarr.Array, t int64) (result, error) {
	shape := a.Meta.Shape
	if len(shape) < 2 || t < 0 || t >= shape[0] {
		return result{}, fmt.Errorf("no slice %d of shape %v", t, shape)
	}
	n := int64(a.ItemSize)
	for _, d := range shape[1:] {
		n *= d
	}
	buf := make([]byte, n)
	start := time.Now()
	got, err := a.ReadAt(ctx, buf, t*n)
	if err != nil && !(err == io.EOF && int64(got) == n) {
		return result{}, err
	}
	return result{Seconds: time.Since(start).Seconds(), Bytes: int64(got)}, nil
}

// decodeAll reads every stored chunk of a into memory, then times decoding
// them all with the array's codec chain on workers goroutines, each
// decoding into one reused buffer, as the cache's recycled buffers do.
func decodeAll(ctx context.Context, store zmap.Store, a *nczarr.Array, workers int) (result, error) {
	m := a.Meta
	size := a.ItemSize
	grid := make([]int64, len(m.Shape))
	for i := range m.Shape {
		size *= int(m.Chunks[i])
		grid[i] = (m.Shape[i] + m.Chunks[i] - 1) / m.Chunks[i]
	}
	var stored [][]byte
	idx := make([]int64, len(grid))
	for {
		data, err := store.Get(ctx, a.ChunkKey(idx))
		switch {
		case errors.Is(err, zmap.ErrNotFound):
		case err != nil:
			return result{}, err
		default:
			stored = append(stored, data)
		}
		if !next(idx, grid) {
			break
		}
	}
	rowChunks := 1
	for _, g := range grid[1:] {
		rowChunks *= int(g)
	}

	var (
		wg      sync.WaitGroup
		nextJob atomic.Int64
		busy    atomic.Int64 // nanoseconds spent in DecodeInto
		mu      sync.Mutex
		first   error
	)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]byte, size)
			for {
				i := int(nextJob.Add(1) - 1)
				if i >= len(stored) {
					return
				}
				t := time.Now()
				out, err := a.Chain.DecodeInto(dst, stored[i], size)
				busy.Add(int64(time.Since(t)))
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("chunk %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				if cap(out) >= size {
					dst = out[:size]
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return result{}, first
	}
	return result{
		Seconds:      elapsed.Seconds(),
		Bytes:        int64(len(stored)) * int64(size),
		Chunks:       len(stored),
		ChunkSeconds: time.Duration(busy.Load()).Seconds(),
		RowChunks:    rowChunks,
	}, nil
}

// next advances the chunk index idx in C order over grid; false past the end.
func next(idx, grid []int64) bool {
	for i := len(idx) - 1; i >= 0; i-- {
		if idx[i]++; idx[i] < grid[i] {
			return true
		}
		idx[i] = 0
	}
	return false
}
