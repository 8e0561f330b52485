package azure_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/azuritetest"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
)

// TestListPages lists a folder and the whole dataset over pages of 7
// names: Search and ListFlat give every name once, in order, and say how
// many pages they took; a flat listing past its limit says it is not
// complete.
func TestListPages(t *testing.T) {
	defer azure.SetListPageSize(7)()
	srv := azuritetest.Start(t)
	srv.CreateContainer(t, "pages", azuritetest.Private)
	blobs := map[string][]byte{"ds/.zgroup": []byte("{}"), "ds/v/.zarray": []byte("{}"), "ds/v/sub/x": []byte("x")}
	var chunks []string
	for i := range 50 {
		name := fmt.Sprint(i)
		chunks = append(chunks, name)
		blobs["ds/v/"+name] = []byte(name)
	}
	srv.Put(t, "pages", blobs)
	st := open(t, srv, "pages", "ds", azure.Options{})
	ctx := context.Background()

	got, err := st.Search(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(chunks), ".zarray", "sub")
	slices.Sort(want)
	var names []string
	for _, e := range got {
		names = append(names, e.Name)
		if e.Dir != (e.Name == "sub") || !e.Dir && (e.ETag == "" || e.Size == 0) {
			t.Errorf("Search: entry %+v", e)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("Search(v) = %v, want %v", names, want)
	}

	flat, err := st.ListFlat(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !flat.Complete || len(flat.Entries) != len(blobs) || flat.Requests != (len(blobs)+6)/7 {
		t.Errorf("ListFlat = %d entries, complete %v, %d requests; want %d, true, %d", len(flat.Entries), flat.Complete, flat.Requests, len(blobs), (len(blobs)+6)/7)
	}
	if !slices.IsSortedFunc(flat.Entries, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) }) || flat.Entries[0].Name != ".zgroup" {
		t.Errorf("ListFlat entries out of order or misnamed: %v", flat.Entries[:3])
	}
	part, err := st.ListFlat(ctx, "", 10)
	if err != nil || part.Complete || len(part.Entries) != 0 {
		t.Errorf("ListFlat with limit 10 = %d entries, complete %v, %v; want an incomplete listing", len(part.Entries), part.Complete, err)
	}
}
