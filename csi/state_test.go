package csi

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStateDir(t *testing.T) {
	s := stateDir{root: filepath.Join(t.TempDir(), "state")}
	if err := s.init(); err != nil {
		t.Fatal(err)
	}
	a := record{VolumeID: "run42", Target: "/var/lib/kubelet/pods/a/volumes/kubernetes.io~csi/run42/mount", Source: "s3://b/run42",
		Flags: []string{"--region=r"}, Secrets: true, Published: time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)}
	b := a
	b.Target = "/var/lib/kubelet/pods/b/volumes/kubernetes.io~csi/run42/mount"
	for _, r := range []record{a, b} {
		if err := s.save(r); err != nil {
			t.Fatal(err)
		}
	}
	ka, kb := volumeKey(a.VolumeID, a.Target), volumeKey(b.VolumeID, b.Target)
	if ka == kb {
		t.Fatalf("one volume at two targets has one key %s", ka)
	}
	got, err := s.load(ka)
	if err != nil || !got.sameMount(a) || !got.Secrets || !got.Published.Equal(a.Published) {
		t.Fatalf("load = %+v, %v; want %+v", got, err, a)
	}
	if fi, err := os.Stat(s.recordFile(ka)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	// A folder without a readable record, and one whose record is
	// another's, are reported, not listed.
	os.MkdirAll(s.dir("empty"), 0o700)
	os.MkdirAll(s.dir("moved"), 0o700)
	raw, _ := os.ReadFile(s.recordFile(ka))
	os.WriteFile(s.recordFile("moved"), raw, 0o600)
	recs, bad, err := s.list()
	if err != nil || len(recs) != 2 || !recs[ka].sameMount(a) || !recs[kb].sameMount(b) {
		t.Errorf("list = %v, %v", recs, err)
	}
	if len(bad) != 2 || bad["empty"] == nil || bad["moved"] == nil {
		t.Errorf("bad = %v, want empty and moved", bad)
	}
	if err := s.remove(ka); err != nil {
		t.Fatal(err)
	}
	if _, err := s.load(ka); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("load after remove: %v, want not found", err)
	}
	c := a
	c.Flags = []string{"--region=other"}
	if a.sameMount(c) || !a.sameMount(a) {
		t.Errorf("sameMount does not tell flags apart")
	}
}

func TestSocketPath(t *testing.T) {
	for in, want := range map[string]string{
		"unix:///csi/csi.sock": "/csi/csi.sock",
		"unix:/csi/csi.sock":   "/csi/csi.sock",
		"/csi//csi.sock":       "/csi/csi.sock",
		"unix://csi.sock":      "",
		"tcp://127.0.0.1:1":    "",
		"":                     "",
	} {
		got, err := socketPath(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("socketPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestListenUnix: a socket file nobody answers on is replaced; one a
// server answers on, or a file that is not a socket, is refused.
func TestListenUnix(t *testing.T) {
	dir, err := os.MkdirTemp("", "csi-listen-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "csi.sock")
	ln, err := listenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := listenUnix(path); err == nil {
		t.Errorf("listening where a server answers: no error")
	}
	// What a killed plugin leaves: the file, and nobody listening.
	ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatal(err)
	}
	ln, err = listenUnix(path)
	if err != nil {
		t.Fatalf("replacing a stale socket: %v", err)
	}
	ln.Close()
	plain := filepath.Join(dir, "file")
	os.WriteFile(plain, nil, 0o600)
	if _, err := listenUnix(plain); err == nil {
		t.Errorf("listening over a plain file: no error")
	}
}

// TestKeyedMutex: calls of one key run one at a time, and a key's lock
// is forgotten once nobody holds or waits for it.
func TestKeyedMutex(t *testing.T) {
	var k keyedMutex
	inside := map[string]*int{"a": new(int), "b": new(int)} // read-only map
	done := make(chan struct{})
	for i := 0; i < 40; i++ {
		key := []string{"a", "b"}[i%2]
		go func() {
			defer func() { done <- struct{}{} }()
			unlock := k.lock(key)
			n := inside[key]
			*n++ // guarded by the key's lock: -race checks
			if *n != 1 {
				t.Errorf("%d calls of key %s at once", *n, key)
			}
			time.Sleep(time.Millisecond)
			*n--
			unlock()
		}()
	}
	for i := 0; i < 40; i++ {
		<-done
	}
	if len(k.locks) != 0 {
		t.Errorf("%d locks kept after use", len(k.locks))
	}
}
