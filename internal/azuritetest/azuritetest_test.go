package azuritetest_test

import (
	"context"
	"io"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/azuritetest"
)

// TestStartPutGet starts a server, uploads a blob and reads it back.
func TestStartPutGet(t *testing.T) {
	s := azuritetest.Start(t)
	s.CreateContainer(t, "cont", azuritetest.Private)
	s.Put(t, "cont", map[string][]byte{"a/b": []byte("hello")})
	resp, err := s.Client(t).DownloadStream(context.Background(), "cont", "a/b", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != "hello" {
		t.Fatalf("got %q, %v; want hello", got, err)
	}
}
