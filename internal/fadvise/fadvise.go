// Package fadvise asks the kernel to start reading parts of files into
// its page cache in the background, so that a later read finds them there
// instead of waiting for the disk.
//
// It serves the read-ahead of local stores: a goroutine that reads a cold
// file holds a thread, and with every core busy decoding it waits for one
// too, so a pipeline that both reads and decodes leaves the disk idle
// while it decodes. Advice costs one system call and no thread.
package fadvise

import "os"

// WillNeed asks the kernel to read n bytes of f at off into the page
// cache in the background (n = 0: to the end of the file). It is a hint:
// where the system has no such advice, or the call fails, nothing happens.
func WillNeed(f *os.File, off, n int64) { willNeed(f, off, n) }
