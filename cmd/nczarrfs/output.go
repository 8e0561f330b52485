package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// output is a file written beside its destination and renamed over it only
// once it is whole: a failed or interrupted export or cat -o leaves the
// user's earlier file as it was, and never a partial file under its name.
type output struct {
	*os.File
	dest string
}

// createOutput opens a temporary file in dest's folder. It gets dest's
// mode when dest exists, else the mode os.Create would give (0666 less
// the umask).
func createOutput(dest string) (*output, error) {
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(dest)
	tmp := filepath.Join(dir, "."+base+".nczarrfs-"+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", dest, err)
	}
	if fi, err := os.Stat(dest); err == nil {
		if !fi.Mode().IsRegular() {
			f.Close()
			os.Remove(tmp)
			return nil, fmt.Errorf("%s is not a regular file", dest)
		}
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			f.Close()
			os.Remove(tmp)
			return nil, fmt.Errorf("writing %s: %w", dest, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	return &output{File: f, dest: dest}, nil
}

// Commit makes the written file dest: its bytes reach the disk, then it
// is renamed over dest, and the rename reaches the disk.
func (o *output) Commit() error {
	if err := o.Sync(); err != nil {
		o.Abort()
		return fmt.Errorf("writing %s: %w", o.dest, err)
	}
	if err := o.Close(); err != nil {
		os.Remove(o.Name())
		return fmt.Errorf("writing %s: %w", o.dest, err)
	}
	if err := os.Rename(o.Name(), o.dest); err != nil {
		os.Remove(o.Name())
		return fmt.Errorf("writing %s: %w", o.dest, err)
	}
	if d, err := os.Open(filepath.Dir(o.dest)); err == nil {
		d.Sync() // best effort: the file is whole either way
		d.Close()
	}
	return nil
}

// Abort removes the temporary file; dest keeps what it held.
func (o *output) Abort() {
	o.Close()
	os.Remove(o.Name())
}
