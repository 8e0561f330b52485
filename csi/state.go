package csi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
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
//	volumes/KEY/metrics.sock  the mount daemon's metrics (--metrics-addr unix:...;
//	                          metrics-ID.sock once the secrets were rotated)
//	volumes/KEY/mount.log     the mount daemon's log (--log-file)
//	volumes/KEY/next/         where a rotation mounts the new secrets first
//
// A record is written before its mount is made and removed after its
// unmount, so a plugin killed at any point leaves a record for every mount
// it may have made; the restarted plugin adopts them (Driver.Adopt). No
// record holds a secret, only a salted digest of them.

// record is what the plugin keeps of one published volume.
type record struct {
	VolumeID string   `json:"volume_id"`
	Target   string   `json:"target"`
	Source   string   `json:"source"`
	Flags    []string `json:"flags"` // the mount flags the attributes gave
	// Secrets says whether the publish had secrets: a mount whose daemon
	// died is then mounted again only by the next NodePublishVolume,
	// which brings them again.
	Secrets bool `json:"secrets,omitempty"`
	// SecretsSalt and SecretsSHA256 tell the secrets the mount was made
	// with from others, without keeping them: the SHA-256 of a random
	// salt and the secrets (secretsDigest). A republish whose secrets
	// differ brings rotated ones, which Driver.rotate applies.
	SecretsSalt   string `json:"secrets_salt,omitempty"`
	SecretsSHA256 string `json:"secrets_sha256,omitempty"`
	// Confined says the volume is an inline one the plugin does not
	// trust: its daemon gets none of the plugin's credentials
	// (confinedEnv).
	Confined bool `json:"confined,omitempty"`
	// Socket is the file name of the daemon's metrics socket in the
	// volume's folder; metrics.sock when empty. A rotation's daemon gets
	// a name of its own, since the daemon it replaces removes its
	// socket's name when it exits, whenever that is.
	Socket    string    `json:"socket,omitempty"`
	Published time.Time `json:"published"`
}

// sameMount reports whether r and o mount the same thing the same way.
func (r record) sameMount(o record) bool {
	return r.VolumeID == o.VolumeID && r.Target == o.Target && r.Source == o.Source && slices.Equal(r.Flags, o.Flags) && r.Confined == o.Confined
}

// setSecrets makes r's salt, unless it has one, and its digest of the
// secrets env (KEY=VALUE, sorted by key).
func (r *record) setSecrets(env []string) error {
	r.Secrets = len(env) > 0
	if r.SecretsSalt == "" {
		salt := make([]byte, 16)
		if _, err := rand.Read(salt); err != nil {
			return fmt.Errorf("salt of the secrets' digest: %w", err)
		}
		r.SecretsSalt = hex.EncodeToString(salt)
	}
	r.SecretsSHA256 = secretsDigest(r.SecretsSalt, env)
	return nil
}

// sameSecrets reports whether env (KEY=VALUE, sorted by key) are the
// secrets r's mount was made with. A record that kept no digest (of an
// earlier plugin) had the same secrets only when it had none.
func (r record) sameSecrets(env []string) bool {
	if r.SecretsSHA256 == "" {
		return !r.Secrets && len(env) == 0
	}
	return subtle.ConstantTimeCompare([]byte(r.SecretsSHA256), []byte(secretsDigest(r.SecretsSalt, env))) == 1
}

// secretsDigest is the hex SHA-256 of salt and env, each entry ended by a
// NUL (which no secret holds: parseSecrets refuses it).
func secretsDigest(salt string, env []string) string {
	h := sha256.New()
	h.Write([]byte(salt + "\x00"))
	for _, kv := range env {
		h.Write([]byte(kv + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
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
func (s stateDir) trial(key string) string      { return filepath.Join(s.dir(key), "next") }
func (s stateDir) recordFile(key string) string { return filepath.Join(s.dir(key), "volume.json") }

// socket is the path of the metrics socket of r's daemon.
func (s stateDir) socket(key string, r record) string {
	name := r.Socket
	if name == "" {
		name = "metrics.sock"
	}
	return filepath.Join(s.dir(key), name)
}

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
