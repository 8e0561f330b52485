package nczarr

import (
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
)

type asks struct {
	zmap.Store
	n int
}

func (a asks) Parallelism() int { return a.n }

type wraps struct{ zmap.Store }

func (w wraps) Unwrap() zmap.Store { return w.Store }

func TestParallelismThroughWrappers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store zmap.Store
		want  int
	}{
		{"plain", wraps{}, 8},
		{"asks", asks{n: 32}, 32},
		{"wrapped", wraps{asks{n: 32}}, 32},
		{"twice wrapped", wraps{wraps{asks{n: 5}}}, 5},
		{"asks for nothing", asks{n: 0}, 8},
	} {
		if got := parallelism(tc.store); got != tc.want {
			t.Errorf("%s: parallelism = %d, want %d", tc.name, got, tc.want)
		}
	}
}
