package diskcache

// UseOpenat2 sets whether cache files are opened with openat2(2) (where
// the system has it) or with a chain of openat(2); it returns the former
// setting.
func UseOpenat2(on bool) bool { return !noOpenat2.Swap(!on) }
