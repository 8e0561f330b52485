package cache

import "runtime"

// waitABit lets other goroutines run while a test polls a condition.
func waitABit() { runtime.Gosched() }
