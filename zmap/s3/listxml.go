package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithytime "github.com/aws/smithy-go/time"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The SDK decodes a ListObjectsV2 answer with encoding/xml, token by token:
// for a listing of 100,000 chunks that was half of the daemon's CPU time
// (3.1-3.4 CPU-seconds, on 2 cores shared with the S3 server; 1.6-1.8
// with this decoder). The
// decoder here reads the same answers with a scanner over the body in
// memory. It takes only documents it fully understands, and hands
// anything else (a DOCTYPE, CDATA, namespace prefixes, a carriage return
// in a value, a value the SDK would reject) to the SDK's own decoder,
// which then decodes, or fails on, the same bytes: the result is always
// the SDK's.

// decodeListsFast is an APIOptions function of ListObjectsV2 requests: it
// puts listDecoder in the place of the SDK's response decoder.
func decodeListsFast(stack *middleware.Stack) error {
	sdk, ok := stack.Deserialize.Get(operationDeserializer)
	if !ok {
		return fmt.Errorf("s3: no %s in the ListObjectsV2 stack", operationDeserializer)
	}
	_, err := stack.Deserialize.Swap(operationDeserializer, listDecoder{sdk})
	return err
}

// operationDeserializer is the ID of the SDK's response decoder.
const operationDeserializer = "OperationDeserializer"

// listDecoder decodes successful ListObjectsV2 answers with
// decodeListV2 and leaves everything else (errors, bodies it does not
// take, broken bodies, closing) to the SDK's decoder sdk.
type listDecoder struct {
	sdk middleware.DeserializeMiddleware
}

func (listDecoder) ID() string { return operationDeserializer }

func (d listDecoder) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	var fast *s3.ListObjectsV2Output
	send := middleware.DeserializeHandlerFunc(func(ctx context.Context, in middleware.DeserializeInput) (
		middleware.DeserializeOutput, middleware.Metadata, error,
	) {
		out, md, err := next.HandleDeserialize(ctx, in)
		resp, ok := out.RawResponse.(*smithyhttp.Response)
		if err != nil || !ok || resp.StatusCode < 200 || resp.StatusCode >= 300 {
			return out, md, err
		}
		body, err := io.ReadAll(resp.Body)
		rest := io.Reader(bytes.NewReader(body))
		switch {
		case err != nil:
			// The SDK's decoder meets the same broken body.
			rest = io.MultiReader(rest, errReader{err})
		default:
			if v, ok := decodeListV2(body); ok {
				// The SDK's decoder sees an empty body, which it
				// takes for an empty answer, and does the rest:
				// headers, closing, metrics.
				fast, rest = v, bytes.NewReader(nil)
			}
		}
		resp.Body = readCloser{rest, resp.Body}
		return out, md, nil
	})
	out, md, err := d.sdk.HandleDeserialize(ctx, in, send)
	if err == nil && fast != nil {
		sdk, ok := out.Result.(*s3.ListObjectsV2Output)
		if !ok {
			return out, md, fmt.Errorf("s3: the SDK decoded a ListObjectsV2 answer into a %T", out.Result)
		}
		fast.RequestCharged = sdk.RequestCharged // from a header
		out.Result = fast
	}
	return out, md, err
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// decodeListV2 decodes the body of a successful ListObjectsV2 answer into
// every field the SDK's decoder fills from a body. It reports false for a
// body it does not take.
func decodeListV2(body []byte) (*s3.ListObjectsV2Output, bool) {
	sc := &scanner{b: body}
	// Before the root element: an XML declaration, comments, white space.
	var root tok
	for {
		t, ok := sc.next()
		if !ok || t.kind == tokEOF {
			return nil, false
		}
		if t.kind == tokStart {
			root = t
			break
		}
	}
	if !equalFold(root.name, "ListBucketResult") || root.empty {
		return nil, false
	}
	out := &s3.ListObjectsV2Output{}
	for {
		t, ok := sc.next()
		if !ok || t.kind == tokEOF {
			return nil, false
		}
		if t.kind == tokEnd {
			// The root's end (the scanner checks that tags pair up);
			// what follows it the SDK does not read either.
			return out, true
		}
		if t.kind != tokStart {
			continue // text between elements, ignored as the SDK does
		}
		var ok2 bool
		switch name := t.name; {
		case equalFold(name, "Contents"):
			var o types.Object
			ok2 = sc.children(t, func(c tok) bool { return sc.object(c, &o) })
			out.Contents = append(out.Contents, o)
		case equalFold(name, "CommonPrefixes"):
			var p types.CommonPrefix
			ok2 = sc.children(t, func(c tok) bool {
				if equalFold(c.name, "Prefix") {
					return leaf(sc, &p.Prefix, text)
				}
				return sc.skip(c)
			})
			out.CommonPrefixes = append(out.CommonPrefixes, p)
		case equalFold(name, "IsTruncated"):
			ok2 = leaf(sc, &out.IsTruncated, strconv.ParseBool)
		case equalFold(name, "NextContinuationToken"):
			ok2 = leaf(sc, &out.NextContinuationToken, text)
		case equalFold(name, "ContinuationToken"):
			ok2 = leaf(sc, &out.ContinuationToken, text)
		case equalFold(name, "Name"):
			ok2 = leaf(sc, &out.Name, text)
		case equalFold(name, "Prefix"):
			ok2 = leaf(sc, &out.Prefix, text)
		case equalFold(name, "Delimiter"):
			ok2 = leaf(sc, &out.Delimiter, text)
		case equalFold(name, "StartAfter"):
			ok2 = leaf(sc, &out.StartAfter, text)
		case equalFold(name, "EncodingType"):
			ok2 = enum(sc, &out.EncodingType)
		case equalFold(name, "KeyCount"):
			ok2 = leaf(sc, &out.KeyCount, int32Of)
		case equalFold(name, "MaxKeys"):
			ok2 = leaf(sc, &out.MaxKeys, int32Of)
		default:
			ok2 = sc.skip(t)
		}
		if !ok2 {
			return nil, false
		}
	}
}

// object decodes child c of a Contents element into o, as the SDK does.
func (s *scanner) object(c tok, o *types.Object) bool {
	switch {
	case equalFold(c.name, "Key"):
		return leaf(s, &o.Key, text)
	case equalFold(c.name, "Size"):
		return leaf(s, &o.Size, int64Of)
	case equalFold(c.name, "LastModified"):
		return leaf(s, &o.LastModified, smithytime.ParseDateTime)
	case equalFold(c.name, "ETag"):
		return leaf(s, &o.ETag, text)
	case equalFold(c.name, "StorageClass"):
		return enum(s, &o.StorageClass)
	case equalFold(c.name, "ChecksumType"):
		return enum(s, &o.ChecksumType)
	case equalFold(c.name, "ChecksumAlgorithm"):
		var a types.ChecksumAlgorithm
		if !enum(s, &a) {
			return false
		}
		o.ChecksumAlgorithm = append(o.ChecksumAlgorithm, a)
		return true
	case equalFold(c.name, "Owner"):
		if o.Owner == nil {
			o.Owner = &types.Owner{}
		}
		return s.children(c, func(c tok) bool {
			switch {
			case equalFold(c.name, "DisplayName"):
				return leaf(s, &o.Owner.DisplayName, text)
			case equalFold(c.name, "ID"):
				return leaf(s, &o.Owner.ID, text)
			}
			return s.skip(c)
		})
	case equalFold(c.name, "RestoreStatus"):
		if o.RestoreStatus == nil {
			o.RestoreStatus = &types.RestoreStatus{}
		}
		return s.children(c, func(c tok) bool {
			switch {
			case equalFold(c.name, "IsRestoreInProgress"):
				return leaf(s, &o.RestoreStatus.IsRestoreInProgress, strconv.ParseBool)
			case equalFold(c.name, "RestoreExpiryDate"):
				return leaf(s, &o.RestoreStatus.RestoreExpiryDate, smithytime.ParseDateTime)
			}
			return s.skip(c)
		})
	}
	return s.skip(c)
}

// Token kinds.
const (
	tokEOF = iota
	tokStart
	tokEnd
	tokText
	tokOther // a comment or processing instruction
)

// tok is one token: a start tag (empty when it closes itself, <a/>), an
// end tag, text with its entities decoded, or another (a comment or
// processing instruction, which the SDK's decoder also passes over
// between elements but not inside a value).
type tok struct {
	kind  int
	name  []byte
	text  []byte
	empty bool
}

// scanner splits an XML document into tokens. It understands a subset of
// XML: elements without namespace prefixes, attributes (skipped), text
// with the five named entities and character references, comments and
// processing instructions; next reports false on anything else, and on
// anything encoding/xml rejects. It checks that end tags match.
type scanner struct {
	b     []byte
	i     int
	open  [][]byte // names of the open elements
	ended bool     // the last start tag closed itself: its end comes next
}

func (s *scanner) next() (tok, bool) {
	if s.ended {
		s.ended = false
		name := s.open[len(s.open)-1]
		s.open = s.open[:len(s.open)-1]
		return tok{kind: tokEnd, name: name}, true
	}
	for {
		if s.i >= len(s.b) {
			return tok{kind: tokEOF}, len(s.open) == 0
		}
		rest := s.b[s.i:]
		if rest[0] != '<' {
			end := bytes.IndexByte(rest, '<')
			if end < 0 {
				end = len(rest)
			}
			s.i += end
			text, ok := unescape(rest[:end])
			return tok{kind: tokText, text: text}, ok
		}
		switch {
		case bytes.HasPrefix(rest, []byte("<?")):
			end := bytes.Index(rest[2:], []byte("?>"))
			if end < 0 || !s.instruction(rest[2:2+end]) {
				return tok{}, false
			}
			s.i += 2 + end + 2
			return tok{kind: tokOther}, true
		case bytes.HasPrefix(rest, []byte("<!--")):
			end := bytes.Index(rest[4:], []byte("--"))
			if end < 0 || !bytes.HasPrefix(rest[4+end:], []byte("-->")) || !validText(rest[4:4+end]) {
				return tok{}, false
			}
			s.i += 4 + end + 3
			return tok{kind: tokOther}, true
		case bytes.HasPrefix(rest, []byte("<!")):
			return tok{}, false // DOCTYPE, CDATA: the SDK's decoder
		case bytes.HasPrefix(rest, []byte("</")):
			n := nameLen(rest[2:])
			j := skipSpace(rest, 2+n)
			if n == 0 || j >= len(rest) || rest[j] != '>' || len(s.open) == 0 {
				return tok{}, false
			}
			name := rest[2 : 2+n]
			if !bytes.Equal(name, s.open[len(s.open)-1]) {
				return tok{}, false
			}
			s.open = s.open[:len(s.open)-1]
			s.i += j + 1
			return tok{kind: tokEnd, name: name}, true
		default:
			return s.startTag(rest)
		}
	}
}

// startTag scans the start tag at the beginning of rest.
func (s *scanner) startTag(rest []byte) (tok, bool) {
	n := nameLen(rest[1:])
	if n == 0 {
		return tok{}, false
	}
	name := rest[1 : 1+n]
	j := 1 + n
	for {
		start := j
		j = skipSpace(rest, j)
		if j >= len(rest) {
			return tok{}, false
		}
		switch {
		case rest[j] == '>':
			s.open = append(s.open, name)
			s.i += j + 1
			return tok{kind: tokStart, name: name}, true
		case rest[j] == '/' && j+1 < len(rest) && rest[j+1] == '>':
			s.open = append(s.open, name)
			s.ended = true
			s.i += j + 2
			return tok{kind: tokStart, name: name, empty: true}, true
		case j == start:
			return tok{}, false // an attribute needs space before it
		}
		// An attribute: name="value" or name='value', skipped.
		an := attrNameLen(rest[j:])
		if an == 0 {
			return tok{}, false
		}
		j += an
		j = skipSpace(rest, j)
		if j >= len(rest) || rest[j] != '=' {
			return tok{}, false
		}
		j++
		j = skipSpace(rest, j)
		if j >= len(rest) || (rest[j] != '"' && rest[j] != '\'') {
			return tok{}, false
		}
		q := rest[j]
		end := bytes.IndexByte(rest[j+1:], q)
		if end < 0 {
			return tok{}, false
		}
		value := rest[j+1 : j+1+end]
		if bytes.IndexByte(value, '<') >= 0 {
			return tok{}, false
		}
		if _, ok := unescape(value); !ok {
			return tok{}, false
		}
		j += 1 + end + 1
	}
}

// instruction checks a processing instruction's content: the XML
// declaration must name version 1.0 and UTF-8, if an encoding.
func (s *scanner) instruction(pi []byte) bool {
	target := pi[:nameLen(pi)]
	if len(target) == 0 || !validText(pi) {
		return false
	}
	if !bytes.Equal(target, []byte("xml")) {
		return !equalFold(target, "xml")
	}
	if s.i != 0 && len(bytes.TrimLeft(s.b[:s.i], " \t\n")) != 0 {
		return false
	}
	// Only the common declarations, in either quotes (Google Cloud
	// Storage writes version='1.0' encoding='UTF-8'); anything else
	// goes to the SDK.
	decl := string(bytes.TrimSpace(pi[3:]))
	if !strings.Contains(decl, `"`) {
		decl = strings.ReplaceAll(decl, "'", `"`)
	}
	switch decl {
	case `version="1.0"`, `version="1.0" encoding="UTF-8"`, `version="1.0" encoding="utf-8"`,
		`version="1.0" encoding="UTF-8" standalone="yes"`:
		return true
	}
	return false
}

// children calls f with each child element of the open element t, and
// reads through t's end. Text between the children is ignored.
func (s *scanner) children(t tok, f func(tok) bool) bool {
	if t.empty {
		_, ok := s.next()
		return ok
	}
	for {
		c, ok := s.next()
		switch {
		case !ok || c.kind == tokEOF:
			return false
		case c.kind == tokEnd:
			return true
		case c.kind == tokStart:
			if !f(c) {
				return false
			}
		}
	}
}

// skip reads through the end of the open element t.
func (s *scanner) skip(t tok) bool {
	return s.children(t, s.skip)
}

// value reads the text of the element just opened through its end:
// empty for <a/> and <a></a>, and false for anything but one text.
func (s *scanner) value() ([]byte, bool) {
	c, ok := s.next()
	if !ok {
		return nil, false
	}
	if c.kind == tokEnd {
		return []byte{}, true
	}
	if c.kind != tokText {
		return nil, false
	}
	if e, ok := s.next(); !ok || e.kind != tokEnd {
		return nil, false
	}
	// encoding/xml turns "\r\n" and "\r" into "\n" in text, but not in
	// character references: leave both to it.
	if bytes.IndexByte(c.text, '\r') >= 0 {
		return nil, false
	}
	return c.text, true
}

// leaf decodes the text of the element just opened with parse into a new
// value at *dst, as the SDK fills a field.
func leaf[T any](s *scanner, dst **T, parse func(string) (T, error)) bool {
	v, ok := s.value()
	if !ok {
		return false
	}
	x, err := parse(string(v))
	if err != nil {
		return false
	}
	*dst = &x
	return true
}

// enum sets *dst to the text of the element just opened (a string-valued
// type of the SDK, set as a value, not a pointer).
func enum[T ~string](s *scanner, dst *T) bool {
	v, ok := s.value()
	if ok {
		*dst = T(v)
	}
	return ok
}

// The parsers of leaf, converting as the SDK converts.

func text(v string) (string, error) { return v, nil }

func int64Of(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }

func int32Of(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	return int32(n), err
}

// nameLen is the length of the element name at the start of b: ASCII
// letters, digits, '_', '-' and '.', beginning with a letter or '_'.
// Other names (namespace prefixes, non-ASCII letters) go to the SDK.
func nameLen(b []byte) int {
	n := 0
	for n < len(b) {
		c := b[n]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' ||
			n > 0 && (c >= '0' && c <= '9' || c == '-' || c == '.') {
			n++
			continue
		}
		break
	}
	return n
}

// attrNameLen is nameLen for attribute names, which may have a prefix
// (xmlns:x).
func attrNameLen(b []byte) int {
	n := nameLen(b)
	if n > 0 && n < len(b) && b[n] == ':' {
		if m := nameLen(b[n+1:]); m > 0 {
			return n + 1 + m
		}
		return 0
	}
	return n
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after j in b that
// is not white space.
func skipSpace(b []byte, j int) int {
	for j < len(b) && isSpace(b[j]) {
		j++
	}
	return j
}

// equalFold matches an element name as the SDK does (strings.EqualFold).
func equalFold(name []byte, s string) bool { return bytes.EqualFold(name, []byte(s)) }

// validText reports whether b is UTF-8 made of characters XML allows.
func validText(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || !xmlChar(r) {
			return false
		}
		i += n
	}
	return true
}

// xmlChar reports whether r is a character XML 1.0 allows.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// unescape checks text and decodes its entities; false for a character or
// entity encoding/xml rejects.
func unescape(b []byte) ([]byte, bool) {
	if !validText(b) {
		return nil, false
	}
	amp := bytes.IndexByte(b, '&')
	if amp < 0 {
		return b, true
	}
	out := make([]byte, 0, len(b))
	for amp >= 0 {
		out = append(out, b[:amp]...)
		b = b[amp+1:]
		semi := bytes.IndexByte(b, ';')
		if semi <= 0 {
			return nil, false
		}
		ent := b[:semi]
		switch string(ent) {
		case "lt":
			out = append(out, '<')
		case "gt":
			out = append(out, '>')
		case "amp":
			out = append(out, '&')
		case "apos":
			out = append(out, '\'')
		case "quot":
			out = append(out, '"')
		default:
			if ent[0] != '#' || len(ent) < 2 {
				return nil, false
			}
			digits, base := ent[1:], 10
			if digits[0] == 'x' {
				digits, base = digits[1:], 16
			}
			if len(digits) == 0 || digits[0] == '+' || digits[0] == '-' {
				return nil, false
			}
			n, err := strconv.ParseUint(string(digits), base, 32)
			if err != nil || !xmlChar(rune(n)) {
				return nil, false
			}
			out = utf8.AppendRune(out, rune(n))
		}
		b = b[semi+1:]
		amp = bytes.IndexByte(b, '&')
	}
	return append(out, b...), true
}
