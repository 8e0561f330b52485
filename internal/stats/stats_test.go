package stats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

func TestStoreCounts(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "v"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"v/.zarray": "{}", "v/0": "0123456789"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	s := CountStore(fs)
	ctx := context.Background()
	if _, err := s.Get(ctx, "v/.zarray"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "v/missing"); !errors.Is(err, zmap.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := s.ReadAt(ctx, "v/0", buf, 8); err == nil {
		t.Fatal("ReadAt past the end: no error")
	}
	if _, err := s.ReadAt(ctx, "v/0", buf, 0); err != nil {
		t.Fatal(err)
	}
	// ReadVec counts as a read; on a store that has none it fails and
	// counts nothing.
	if _, err := s.ReadVec(ctx, "v/0", [][]byte{make([]byte, 2), make([]byte, 3)}, 1); err != nil {
		t.Fatal(err)
	}
	plain := CountStore(struct{ zmap.Store }{fs})
	if _, err := plain.ReadVec(ctx, "v/0", [][]byte{buf}, 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ReadVec on a store without it: %v, want errors.ErrUnsupported", err)
	}
	if got := plain.Snapshot(); got.Objects != 0 || got.ReadAt.Requests != 0 {
		t.Errorf("ReadVec on a store without it was counted: %+v", got)
	}
	if _, err := s.Size(ctx, "v/0"); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Stat(ctx, "v/0"); err != nil || e.Size != 10 {
		t.Fatalf("Stat = %+v, %v", e, err)
	}
	if _, err := s.Search(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	s.Get(cancelled, "v/0") // an error that is not not-found

	want := StoreSnapshot{
		Objects: 6, Bytes: 2 + 2 + 4 + 5,
		Get:    OpSnapshot{Requests: 3, Bytes: 2, Errors: 1},
		ReadAt: OpSnapshot{Requests: 3, Bytes: 11},
		Size:   OpSnapshot{Requests: 1},
		Stat:   OpSnapshot{Requests: 1},
		Search: OpSnapshot{Requests: 1, Entries: 2},
		// 3 GETs, 3 ranged GETs (2 ReadAt, 1 ReadVec), Size and Stat
		// as HEADs, the Search as a LIST.
		Requests: Kinds{GET: 3, RangedGET: 3, HEAD: 2, LIST: 1},
	}
	if got := s.Snapshot(); got != want {
		t.Errorf("Snapshot =\n%+v, want\n%+v", got, want)
	}
}

func TestErrorLogKeepsTheLast(t *testing.T) {
	tests := []struct {
		size, added int
		wantKeys    []string
	}{
		{size: 3, added: 0, wantKeys: nil},
		{size: 3, added: 2, wantKeys: []string{"k0", "k1"}},
		{size: 3, added: 3, wantKeys: []string{"k0", "k1", "k2"}},
		{size: 3, added: 7, wantKeys: []string{"k4", "k5", "k6"}},
		{size: 1, added: 2, wantKeys: []string{"k1"}},
		{size: 0, added: 2, wantKeys: []string{"k1"}}, // at least one kept
	}
	for _, tt := range tests {
		l := NewErrorLog(tt.size)
		for i := range tt.added {
			kind := "io"
			if i%2 == 1 {
				kind = "corrupt"
			}
			l.Add(Error{Op: "read", Key: fmt.Sprintf("k%d", i), Kind: kind})
		}
		var keys []string
		for _, e := range l.Last() {
			keys = append(keys, e.Key)
		}
		if fmt.Sprint(keys) != fmt.Sprint(tt.wantKeys) {
			t.Errorf("size %d, %d added: kept %v, want %v", tt.size, tt.added, keys, tt.wantKeys)
		}
		counts := l.Counts()
		if counts["io"]+counts["corrupt"] != int64(tt.added) || counts["corrupt"] != int64(tt.added/2) {
			t.Errorf("size %d, %d added: counts %v", tt.size, tt.added, counts)
		}
		lines := l.JSONLines()
		if n := bytes.Count(lines, []byte("\n")); n != len(tt.wantKeys) {
			t.Errorf("size %d, %d added: %d JSON lines, want %d", tt.size, tt.added, n, len(tt.wantKeys))
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(lines, []byte("\n")), []byte("\n")) {
			var e Error
			if len(tt.wantKeys) == 0 {
				break
			}
			if err := json.Unmarshal(line, &e); err != nil || e.Key != tt.wantKeys[i] {
				t.Errorf("line %q: %+v, %v", line, e, err)
			}
		}
	}
}

func TestMountJSON(t *testing.T) {
	c := cache.New(1 << 20)
	ctx := context.Background()
	load := func(context.Context) ([]byte, error) { return []byte("value"), nil }
	c.Get(ctx, "a", load)
	c.Get(ctx, "a", load)
	// A read-ahead load of b, then a read that finds it: one more hit.
	loadB := func(context.Context, cache.Alloc) ([]byte, error) { return []byte("bb"), nil }
	run, ok := c.Prefetch(ctx, "b", loadB)
	if !ok {
		t.Fatal("Prefetch: nothing to load")
	}
	run()
	ref, err := c.Acquire(ctx, "b", loadB)
	if err != nil {
		t.Fatal(err)
	}
	ref.Release()
	m := &Mount{Source: "file:///x.zip", Cache: c}
	m.Errors().Add(Error{Op: "read data", Key: "v", Kind: "corrupt", Errno: "EIO", Err: "chunk v/0: corrupt chunk"})

	var got struct {
		Source string          `json:"source"`
		Store  json.RawMessage `json:"store"`
		Cache  CacheSnapshot   `json:"cache"`
		Errors map[string]int  `json:"errors"`
	}
	out := m.JSON()
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	if got.Source != m.Source || got.Store != nil || got.Cache.Hits != 2 || got.Cache.Misses != 1 ||
		got.Cache.DecodedBytes != int64(len("value")+len("bb")) ||
		got.Cache.ReadAheadLoads != 1 || got.Cache.ReadAheadHits != 1 ||
		got.Cache.Budget != 1<<20 || got.Errors["corrupt"] != 1 || !strings.HasSuffix(string(out), "}\n") {
		t.Errorf("JSON:\n%s", out)
	}
}

// pacedStore is a store that paces its requests, as zmap/s3's does.
type pacedStore struct{ zmap.Store }

func (pacedStore) Throttled() int64                  { return 7 }
func (pacedStore) RequestLimit() (now, lowest int)   { return 12, 3 }
func (pacedStore) Resumed() (resumed, changed int64) { return 5, 1 }

// TestStorePacing checks store.pacing: present for a store that paces
// its requests, found through wrappers, and absent for one that does not.
func TestStorePacing(t *testing.T) {
	fs, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if p := CountStore(fs).Snapshot().Pacing; p != nil {
		t.Errorf("a file store has pacing %+v, want none", p)
	}
	m := &Mount{Store: CountStore(wrapped{pacedStore{fs}})}
	var got struct {
		Store struct {
			Pacing map[string]int64 `json:"pacing"`
		} `json:"store"`
	}
	out := m.JSON()
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	want := map[string]int64{"throttled": 7, "request_limit": 12, "lowest_request_limit": 3, "resumed": 5, "changed": 1}
	if fmt.Sprint(got.Store.Pacing) != fmt.Sprint(want) {
		t.Errorf("store.pacing = %v, want %v\n%s", got.Store.Pacing, want, out)
	}
}

// wrapped is a store wrapper (as the disk cache is) that says what it
// wraps.
type wrapped struct{ zmap.Store }

func (w wrapped) Unwrap() zmap.Store { return w.Store }
