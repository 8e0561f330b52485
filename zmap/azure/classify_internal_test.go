package azure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// TestClassifyAgreesWithMapErr checks, for the answers of the service and
// for anonymous and signed stores, that classify (which remote.Reader
// acts on) and mapErr (what the caller sees) say the same: NotFound only
// with zmap.ErrNotFound, Permission only with zmap.ErrPermission. Above
// all, ResourceNotFound is never a missing blob, which a chunk would read
// as fill values.
func TestClassifyAgreesWithMapErr(t *testing.T) {
	answers := []struct {
		status int
		code   string
	}{
		{404, "BlobNotFound"}, {404, "ResourceNotFound"}, {404, "ContainerNotFound"}, {404, ""},
		{403, "AuthorizationFailure"}, {403, "AuthenticationFailed"}, {403, ""}, {401, "NoAuthenticationInformation"},
		{409, "PublicAccessNotPermitted"}, {416, "InvalidRange"}, {412, "ConditionNotMet"},
		{503, "ServerBusy"}, {500, "InternalError"}, {400, "InvalidQueryParameterValue"},
	}
	for _, kind := range []credKind{anonymous, sharedKey} {
		s := &Store{
			loc:      Location{Account: "acct", Container: "c", Prefix: "ds"},
			creds:    creds{kind: kind, account: "acct", source: "the test"},
			endpoint: "http://127.0.0.1:1/acct",
			log:      slog.New(slog.DiscardHandler),
		}
		for _, a := range answers {
			name := fmt.Sprintf("%v/%d %s", kind == anonymous, a.status, a.code)
			t.Run(name, func(t *testing.T) {
				err := &azcore.ResponseError{StatusCode: a.status, ErrorCode: a.code}
				c := backend{s}.Classify(err)
				mapped := s.mapErr(context.Background(), "GetBlob", "g/v/0.0", err)
				notFound, denied := errors.Is(mapped, zmap.ErrNotFound), errors.Is(mapped, zmap.ErrPermission)
				if (c == remote.NotFound) != notFound || (c == remote.Permission) != denied {
					t.Errorf("classify says %v, mapErr says %v (not found %v, denied %v)", c, mapped, notFound, denied)
				}
				if a.code == "ResourceNotFound" && (notFound || c == remote.NotFound) {
					t.Errorf("ResourceNotFound reads as a missing blob: %v, %v", c, mapped)
				}
				if a.code == "BlobNotFound" && !notFound {
					t.Errorf("BlobNotFound is not a missing blob: %v", mapped)
				}
				if a.status == http.StatusNotFound && a.code == "ResourceNotFound" && kind == anonymous && !denied {
					t.Errorf("anonymous ResourceNotFound: %v; want a permission error", mapped)
				}
			})
		}
	}
}
