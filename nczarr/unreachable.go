package nczarr

import (
	"context"
	"errors"
	"sync"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// What the walk learns from the store is kept for the life of the
// Dataset, so only answers the store gave may shape it: an object, its
// absence (a 404), a refusal (a 403), or an object that does not parse.
// A failure to reach the store (a timeout, a reset connection, a 5xx, a
// throttling answer, a context that ended) says nothing of the dataset:
// the part of the tree it was read for is read again at the next access
// (lazy.go), instead of keeping an array that fails or a group that lacks
// children until the mount ends.

// unreachable marks a failure to reach the store. Its message is the
// store's own.
type unreachable struct{ error }

func (u unreachable) Unwrap() error { return u.error }

// Unreachable reports whether err, an Array's Err or an error of this
// package, is a failure to reach the store rather than an answer of the
// store: asking again may then give another answer.
func Unreachable(err error) bool {
	var u unreachable
	return errors.As(err, &u)
}

// answered reports whether err, from a store, is nil or one of the
// store's answers (not found, permission denied).
func answered(err error) bool {
	return err == nil || errors.Is(err, zmap.ErrNotFound) || errors.Is(err, zmap.ErrPermission)
}

// failures collects the failures to reach the store met while reading
// part of the tree (one child of a group), and passes them up to the
// part it belongs to (the group's read).
type failures struct {
	up    *failures
	mu    sync.Mutex
	first error // GUARDED_BY(mu)
}

type failuresKey struct{}

// withFailures returns ctx carrying a new collector of failures, which
// passes them up to the one ctx carries, if any.
func withFailures(ctx context.Context) (context.Context, *failures) {
	f := &failures{}
	f.up, _ = ctx.Value(failuresKey{}).(*failures)
	return context.WithValue(ctx, failuresKey{}, f), f
}

// noteFailure records err, a failure to reach the store, in the collector
// ctx carries, and returns it marked as such.
func noteFailure(ctx context.Context, err error) error {
	if answered(err) {
		return err
	}
	for f, _ := ctx.Value(failuresKey{}).(*failures); f != nil; f = f.up {
		f.mu.Lock()
		if f.first == nil {
			f.first = err
		}
		f.mu.Unlock()
	}
	if Unreachable(err) {
		return err
	}
	return unreachable{err}
}

// err returns the first failure collected, or nil.
func (f *failures) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil || Unreachable(f.first) {
		return f.first
	}
	return unreachable{f.first}
}
