package csi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The state folder (--state-dir) holds one folder per published volume,
// named by volumeKey:
//
//	volumes/KEY/volume.json   the record: what was mounted where, and how
//	volumes/KEY/metrics.sock  the mount daemon's metrics (--metrics-addr unix:...)
//	volumes/KEY/mount.log     the mount daemon's log (--log-file)
//
// A record is written before its mount is made and removed after its
// unmount, so a plugin killed at any point leaves a record for every mount
// it may have made; the restarted plugin adopts them (Driver.Adopt). No
// record holds a secret.

// record is what the plugin keeps of one published volume.
type record struct {
	VolumeID string   `json:"volume_id"`
	Target   string   `json:"target"`
	Source   string   `json:"source"`
	Flags    []string `json:"flags"` // the mount flags the attributes gave
	// Secrets says whether the publish had secrets: a mount whose daemon
	// died is then mounted again only by the next NodePublishVolume,
	// which brings them again.
	Secrets   bool      `json:"secrets,omitempty"`
	Published time.Time `json:"published"`
}

// sameMount reports whether r and o mount the same thing the same way.
func (r record) sameMount(o record) bool {
	return r.VolumeID == o.VolumeID && r.Target == o.Target && r.Source == o.Source && slices.Equal(r.Flags, o.Flags)
}

// volumeKey names the state folder of a volume published at target: a
// volume may be published at several targets (one per pod on the node).
func volumeKey(volumeID, target string) string {
	sum := sha256.Sum256([]byte(volumeID + "\x00" + target))
	return hex.EncodeToString(sum[:12])
}

// stateDir is the state folder.
type stateDir struct {
	root string
}

func (s stateDir) dir(key string) string        { return filepath.Join(s.root, "volumes", key) }
func (s stateDir) logFile(key string) string    { return filepath.Join(s.dir(key), "mount.log") }
func (s stateDir) socket(key string) string     { return filepath.Join(s.dir(key), "metrics.sock") }
func (s stateDir) recordFile(key string) string { return filepath.Join(s.dir(key), "volume.json") }

// init creates the state folder, readable by root only.
func (s stateDir) init() error {
	if err := os.MkdirAll(filepath.Join(s.root, "volumes"), 0o700); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	return nil
}

// save writes r's record, replacing the old one whole (write and rename).
func (s stateDir) save(r record) error {
	key := volumeKey(r.VolumeID, r.Target)
	if err := os.MkdirAll(s.dir(key), 0o700); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.recordFile(key) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	if err := os.Rename(tmp, s.recordFile(key)); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	return nil
}

// load reads the record of key; fs.ErrNotExist when there is none.
func (s stateDir) load(key string) (record, error) {
	var r record
	b, err := os.ReadFile(s.recordFile(key))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", s.recordFile(key), err)
	}
	if r.VolumeID == "" || r.Target == "" || volumeKey(r.VolumeID, r.Target) != key {
		return r, fmt.Errorf("%s: not the record of this folder", s.recordFile(key))
	}
	return r, nil
}

// remove deletes the folder of key: record, log and socket.
func (s stateDir) remove(key string) error {
	if err := os.RemoveAll(s.dir(key)); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	return nil
}

// list returns every readable record, by key. Folders that hold none
// (a plugin killed between making the folder and writing the record) are
// reported in bad with why.
func (s stateDir) list() (recs map[string]record, bad map[string]error, err error) {
	entries, err := os.ReadDir(filepath.Join(s.root, "volumes"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("state folder: %w", err)
	}
	recs, bad = map[string]record{}, map[string]error{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		r, err := s.load(e.Name())
		if err != nil {
			bad[e.Name()] = err
			continue
		}
		recs[e.Name()] = r
	}
	return recs, bad, nil
}
