package mountinfo

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
36 35 98:0 /mnt1 /mnt/my\040dir rw,noatime master:1 - ext3 /dev/root rw,errors=continue
40 22 0:40 / /tmp/x ro,nosuid,nodev,relatime - fuse.nczarrfs /data/a\040b.zip ro,user_id=0
short line
41 22 0:41 / /no/separator rw shared:2 ext4 /dev/sdb rw
`
	got, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{"/", "ext4", "/dev/sda1"},
		{"/mnt/my dir", "ext3", "/dev/root"},
		{"/tmp/x", "fuse.nczarrfs", "/data/a b.zip"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Parse =\n %q\nwant\n %q", got, want)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n")
	f.Add("1 2 3 4 \\0 5 6 - 7\n- - - - - - - - -\n")
	f.Fuzz(func(t *testing.T, s string) {
		mounts, _ := Parse(strings.NewReader(s))
		for _, m := range mounts {
			if m.FSType == "" || m.Source == "" {
				t.Fatalf("entry with empty fields from %q: %+v", s, m)
			}
		}
	})
}

// TestAt reads this machine's table: the root is mounted, a fresh folder
// is not.
func TestAt(t *testing.T) {
	if m, ok := At("/"); !ok || m.FSType == "" {
		t.Errorf(`At("/") = %+v, %v; want the root's mount`, m, ok)
	}
	if m, ok := At(t.TempDir()); ok {
		t.Errorf("At(a fresh folder) = %+v; want no mount", m)
	}
}
