package s3

import (
	"context"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// GoogleRegion is the region requests to Google Cloud Storage are signed
// for when none is named: Google's XML API takes "auto" for any bucket.
const GoogleRegion = "auto"

// unsignedHeaders are the request headers Google's front end rewrites
// before Cloud Storage checks a signature (it adds to Accept-Encoding):
// signed, they make every signed request fail with SignatureDoesNotMatch
// (aws-sdk-go-v2 issue 1816). They are still sent, only not signed.
var unsignedHeaders = []string{"Accept-Encoding"}

// heldHeadersKey keys the headers taken off a request while it is signed.
type heldHeadersKey struct{}

// signWithout is an APIOptions function that takes unsignedHeaders off
// every request just before the SDK signs it, and puts them back just
// after.
func signWithout(stack *middleware.Stack) error {
	hold := middleware.FinalizeMiddlewareFunc("nczarrfs:HoldUnsignedHeaders", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		if req, ok := in.Request.(*smithyhttp.Request); ok {
			held := map[string][]string{}
			for _, h := range unsignedHeaders {
				if v, ok := req.Header[h]; ok {
					held[h] = v
					req.Header.Del(h)
				}
			}
			ctx = middleware.WithStackValue(ctx, heldHeadersKey{}, held)
		}
		return next.HandleFinalize(ctx, in)
	})
	restore := middleware.FinalizeMiddlewareFunc("nczarrfs:RestoreUnsignedHeaders", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		if req, ok := in.Request.(*smithyhttp.Request); ok {
			if held, ok := middleware.GetStackValue(ctx, heldHeadersKey{}).(map[string][]string); ok {
				for h, v := range held {
					req.Header[h] = v
				}
			}
		}
		return next.HandleFinalize(ctx, in)
	})
	if err := stack.Finalize.Insert(hold, "Signing", middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(restore, "Signing", middleware.After)
}
