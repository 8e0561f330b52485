package azure_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/azuritetest"
	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// faultEnv is Azurite behind a fault-injecting proxy, with one blob of
// random bytes under each of dirs: container "faults", blob DIR/obj.
type faultEnv struct {
	srv   *azuritetest.Server
	proxy *faultproxy.Proxy
	data  []byte
}

func newFaultEnv(t *testing.T, dirs []string) *faultEnv {
	t.Helper()
	srv := azuritetest.Start(t)
	srv.CreateContainer(t, "faults", azuritetest.Private)
	data := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(28, 1))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	blobs := map[string][]byte{}
	for _, d := range dirs {
		blobs[d+"/obj"] = data
	}
	srv.Put(t, "faults", blobs)
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.Start(t, u.Scheme+"://"+u.Host)
	return &faultEnv{srv: srv, proxy: proxy, data: data}
}

// open opens the container through the proxy.
func (e *faultEnv) open(t *testing.T, timeout time.Duration) *azure.Store {
	t.Helper()
	return open(t, e.srv, "faults", "", azure.Options{EndpointURL: e.proxy.URL + "/" + azuritetest.Account, Timeout: timeout})
}

// key is the proxy's key of blob DIR/obj.
func key(dir string) string { return "faults/" + dir + "/obj" }

// errWrongData marks an operation that succeeded with the wrong bytes.
var errWrongData = errors.New("wrong data")

// readOps are the operations that read a body.
var readOps = []struct {
	name string
	run  func(ctx context.Context, st *azure.Store, key string, data []byte) error
}{
	{"Get", func(ctx context.Context, st *azure.Store, key string, data []byte) error {
		b, err := st.Get(ctx, key)
		if err == nil && !bytes.Equal(b, data) {
			return fmt.Errorf("%w: Get returned %d bytes, not the blob's %d", errWrongData, len(b), len(data))
		}
		return err
	}},
	{"ReadAt", func(ctx context.Context, st *azure.Store, key string, data []byte) error {
		p := make([]byte, 30000)
		n, err := st.ReadAt(ctx, key, p, 1234)
		switch {
		case err == io.EOF:
			return fmt.Errorf("%w: ReadAt inside the blob returned %d bytes and io.EOF", errWrongData, n)
		case err == nil && (n != len(p) || !bytes.Equal(p, data[1234:1234+len(p)])):
			return fmt.Errorf("%w: ReadAt returned %d wrong bytes", errWrongData, n)
		}
		return err
	}},
	{"ReadAt past the end", func(ctx context.Context, st *azure.Store, key string, data []byte) error {
		p := make([]byte, 3000)
		off := int64(len(data) - 1000)
		n, err := st.ReadAt(ctx, key, p, off)
		if err == io.EOF {
			if n != 1000 || !bytes.Equal(p[:n], data[off:]) {
				return fmt.Errorf("%w: ReadAt at the end returned %d bytes with io.EOF, want the blob's last 1000", errWrongData, n)
			}
			return nil
		}
		if err == nil {
			return fmt.Errorf("%w: ReadAt past the end returned %d bytes and no io.EOF", errWrongData, n)
		}
		return err
	}},
}

// TestFaults breaks the requests of Get and ReadAt in each way a
// connection breaks and with each answer that asks for another try: once,
// the read ends in the right bytes (retried, or its body resumed with
// If-Match); on every request, it ends in an I/O error (at the timeout),
// never in short or wrong bytes, and reads work again once the fault is
// lifted. A 403 is not tried again.
func TestFaults(t *testing.T) {
	faults := []faultproxy.Fault{
		{Kind: faultproxy.ResetBeforeReply},
		{Kind: faultproxy.ResetMidBody},
		{Kind: faultproxy.CutBody},
		{Kind: faultproxy.CutBodyNoLength},
		{Kind: faultproxy.StallMidBody},
		faultproxy.ServerBusy,
		faultproxy.Bare429,
		faultproxy.InternalError,
		faultproxy.BadGateway,
	}
	type tcase struct {
		name, dir string
		fault     faultproxy.Fault
		op        int
	}
	var cs []tcase
	var dirs []string
	for i, f := range faults {
		for j, op := range readOps {
			dir := fmt.Sprintf("f%d-%d", i, j)
			cs = append(cs, tcase{f.String() + "/" + op.name, dir, f, j})
			dirs = append(dirs, dir+"-once", dir+"-always")
		}
	}
	dirs = append(dirs, "denied")
	env := newFaultEnv(t, dirs)
	const timeout = 2 * time.Second
	st := env.open(t, timeout)
	ctx := context.Background()

	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			t.Run(c.name, func(t *testing.T) {
				op := readOps[c.op]
				once := c.dir + "-once"
				env.proxy.Inject(key(once), c.fault, 1)
				if err := op.run(ctx, st, once+"/obj", env.data); err != nil {
					t.Errorf("one fault: %v", err)
				}
				if n := env.proxy.Count(key(once)); n < 2 {
					t.Errorf("one fault: the proxy saw %d requests for the blob, want a second try", n)
				}

				always := c.dir + "-always"
				env.proxy.Inject(key(always), c.fault, -1)
				err := op.run(ctx, st, always+"/obj", env.data)
				if err == nil && c.fault.Kind == faultproxy.Answer {
					t.Errorf("a fault on every request: no error")
				}
				if errors.Is(err, errWrongData) || errors.Is(err, zmap.ErrNotFound) || errors.Is(err, zmap.ErrPermission) {
					t.Errorf("a fault on every request: %v, want an I/O error or the right bytes", err)
				}
				if err != nil && strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q is more than one line", err)
				}
				env.proxy.Lift(key(always))
				if err := op.run(ctx, st, always+"/obj", env.data); err != nil {
					t.Errorf("after the fault is lifted: %v", err)
				}
			})
		})
	}
	wg.Wait()

	resumed, changed := st.Resumed()
	if resumed == 0 || changed != 0 {
		t.Errorf("Resumed() = %d, %d; want bodies resumed, none changed", resumed, changed)
	}
	if st.Throttled() == 0 {
		t.Errorf("Throttled() = 0 after ServerBusy and 429 answers")
	}

	// A 403 is an answer, not a failure to try again.
	env.proxy.Inject(key("denied"), faultproxy.Fault{Status: 403, Code: "AuthorizationFailure", Message: "denied"}, -1)
	if _, err := st.Get(ctx, "denied/obj"); !errors.Is(err, zmap.ErrPermission) {
		t.Errorf("Get of a denied blob: %v, want ErrPermission", err)
	}
	if n := env.proxy.Count(key("denied")); n != 1 {
		t.Errorf("a 403 was sent %d times, want once", n)
	}
}

// TestChangedBlob replaces a blob while a read of it is broken off: the
// resumed request's If-Match fails, and so does the read (ErrChanged),
// rather than join two versions.
func TestChangedBlob(t *testing.T) {
	env := newFaultEnv(t, []string{"changing"})
	st := env.open(t, 5*time.Second)
	// The first answer stalls half-way; by the time the read resumes,
	// the blob is another.
	env.proxy.Inject(key("changing"), faultproxy.Fault{Kind: faultproxy.StallMidBody}, 1)
	done := make(chan error, 1)
	go func() {
		_, err := st.Get(context.Background(), "changing/obj")
		done <- err
	}()
	for env.proxy.Count(key("changing")) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	env.srv.Put(t, "faults", map[string][]byte{"changing/obj": bytes.Repeat([]byte("new"), 30000)})
	err := <-done
	if !errors.Is(err, remote.ErrChanged) {
		t.Fatalf("Get across a replacement: %v, want ErrChanged", err)
	}
	if _, changed := st.Resumed(); changed != 1 {
		t.Errorf("Resumed() says %d reads of changed blobs, want 1", changed)
	}
}

// TestThrottle reads many blobs at once through a proxy that answers 503
// to every request above a rate: every read ends in the right bytes, and
// the Store lowered its requests in flight.
func TestThrottle(t *testing.T) {
	var dirs []string
	for i := range 64 {
		dirs = append(dirs, fmt.Sprintf("t%02d", i))
	}
	env := newFaultEnv(t, dirs)
	st := env.open(t, 20*time.Second)
	// A burst of 10, then 100 a second: most of the 64 first requests
	// are throttled.
	env.proxy.Throttle(100)
	var wg sync.WaitGroup
	for _, d := range dirs {
		wg.Go(func() {
			if err := readOps[1].run(context.Background(), st, d+"/obj", env.data); err != nil {
				t.Errorf("%s: %v", d, err)
			}
		})
	}
	wg.Wait()
	now, lowest := st.RequestLimit()
	if env.proxy.Throttled() == 0 || st.Throttled() == 0 || lowest >= 64 {
		t.Errorf("after %d throttled answers: Throttled() = %d, RequestLimit() = %d, lowest %d; want the limit lowered", env.proxy.Throttled(), st.Throttled(), now, lowest)
	}
}
