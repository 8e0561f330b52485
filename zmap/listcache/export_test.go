package listcache

import "time"

// SetClock makes c read the time from now.
func (c *Store) SetClock(now func() time.Time) { c.now = now }
