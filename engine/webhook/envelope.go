package webhook

import (
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/internal/jsonenc"
)

// A review's envelope (apiVersion, kind, request.uid,
// request.desiredAPIVersion) is read by the scan that delimits its objects
// (members), and each object is left in the request's bytes for decodeSlim:
// decoding the review with encoding/json would check and copy every
// object's bytes once before decodeSlim reads them again. The answer is
// written the same way: the converted objects' bytes as encodeSlim gave
// them, not checked and copied again by a RawExtension's encoding.

// reviewRequest is what the handler reads of a ConversionReview.
type reviewRequest struct {
	apiVersion, kind string
	uid, desired     string
	// objects are the first max+1 objects (decodeReview's max), count
	// how many there are.
	objects    [][]byte
	count      int
	hasRequest bool
}

// decodeReview reads body, a ConversionReview, as encoding/json would
// decode it into apiextensions/v1's type: keys matched without regard to
// case, the last of equal keys counting (a later request merged into an
// earlier one, as into the same struct), other members checked as it
// checks them. The objects are slices of body; past max+1 they are only
// counted, for the handler to refuse the review without holding them.
//
// One difference is kept: a later objects array replaces an earlier one
// whole, where encoding/json would keep an earlier element at the index
// of a later null.
func decodeReview(body []byte, max int) (*reviewRequest, error) {
	rr := &reviewRequest{}
	err := members(body, 1, func(k string, v []byte) error {
		switch {
		case strings.EqualFold(k, "apiVersion"):
			return stringMember(&rr.apiVersion, k, v)
		case strings.EqualFold(k, "kind"):
			return stringMember(&rr.kind, k, v)
		case strings.EqualFold(k, "response"):
			// Never sent to a webhook; checked for its type as
			// encoding/json decodes it.
			var resp *apiextensionsv1.ConversionResponse
			return json.Unmarshal(v, &resp)
		case strings.EqualFold(k, "request"):
			if string(v) == "null" {
				*rr = reviewRequest{apiVersion: rr.apiVersion, kind: rr.kind}
				return nil
			}
			if v[0] != '{' {
				return fmt.Errorf("request: want an object")
			}
			rr.hasRequest = true
			return members(v, 2, func(k string, v []byte) error {
				switch {
				case strings.EqualFold(k, "uid"):
					return stringMember(&rr.uid, "request.uid", v)
				case strings.EqualFold(k, "desiredAPIVersion"):
					return stringMember(&rr.desired, "request.desiredAPIVersion", v)
				case strings.EqualFold(k, "objects"):
					rr.objects, rr.count = nil, 0
					if string(v) == "null" {
						return nil
					}
					return elements(v, 3, func(o []byte) error {
						if rr.count++; rr.count <= max+1 {
							rr.objects = append(rr.objects, o)
						}
						return nil
					})
				}
				return validMember("request."+k, v)
			})
		}
		return validMember(k, v)
	})
	if err != nil {
		return nil, err
	}
	return rr, nil
}

// stringMember sets *dst to the JSON string v (null leaves it as is, as
// encoding/json does).
func stringMember(dst *string, name string, v []byte) error {
	if string(v) == "null" {
		return nil
	}
	if v[0] != '"' {
		return fmt.Errorf("%s: want a string", name)
	}
	s, err := unquote(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	*dst = s
	return nil
}

// validMember checks a member the handler does not read, as encoding/json
// checks the whole document.
func validMember(name string, v []byte) error {
	if !json.Valid(v) {
		return fmt.Errorf("%s: not valid JSON", name)
	}
	return nil
}

// elements calls f with the bytes of each element of the JSON array raw,
// in order (delimited only: f checks them), and refuses raw when it is not
// one array. depth is how deep raw nests in the document (members).
func elements(raw []byte, depth int, f func(value []byte) error) error {
	i, done, err := first(raw, '[', ']') // slim.go
	if done || err != nil {
		return err
	}
	for n := 0; ; n++ {
		end, err := skipValue(raw, i, depth)
		if err != nil {
			return fmt.Errorf("element %d: %w", n, err)
		}
		if err := f(raw[i:end]); err != nil {
			return err
		}
		if i, done, err = next(raw, end, ']'); done || err != nil { // slim.go
			return err
		}
	}
}

// appendReview appends the ConversionReview that answers rr with the
// converted objects, as encoding/json encodes apiextensions/v1's type with
// Result Success.
func appendReview(b []byte, rr *reviewRequest, converted [][]byte) []byte {
	b = append(b, '{')
	if rr.kind != "" {
		b = append(b, `"kind":`...)
		b = jsonenc.AppendString(b, rr.kind)
		b = append(b, ',')
	}
	if rr.apiVersion != "" {
		b = append(b, `"apiVersion":`...)
		b = jsonenc.AppendString(b, rr.apiVersion)
		b = append(b, ',')
	}
	b = append(b, `"response":{"uid":`...)
	b = jsonenc.AppendString(b, rr.uid)
	b = append(b, `,"convertedObjects":`...)
	if converted == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, o := range converted {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, o...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"result":{"metadata":{},"status":"Success"}}}`...)
	return append(b, '\n')
}
