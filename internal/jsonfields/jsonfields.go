// Package jsonfields reads the top-level members of a JSON object into
// plain Go values without reflection: the few small documents a hook
// process reads once in its life (the harness's hook input, a session
// binding, the broker's INFO), where building encoding/json's reflective
// decoder for a type costs more than the decoding. Decode reads what
// json.Unmarshal into a struct with those fields reads, or reports false
// and the caller leaves the input to encoding/json (which then gives the
// same value or its error).
package jsonfields

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// Field names one member (its key, matched exactly) and where its value
// goes: a *string, *bool, *int, *uint64 or *[]string. A null leaves the
// value as it is, as encoding/json does.
type Field struct {
	Key  string
	Into any
}

var parsers fastjson.ParserPool

// Decode reads the members of the object data named by fields and skips
// the others. It reports false, having perhaps set some fields, where
// encoding/json could read data differently or fail: data is not one
// object, a member's value is not of its field's type (or a string not
// UTF-8), a key matches a field's only case-insensitively (encoding/json
// takes it), or data holds an escaped UTF-16 surrogate or an escape JSON
// does not have (fastjson reads them differently). Of invalid JSON it may
// read more than encoding/json does (a number with a leading zero).
func Decode(data []byte, fields ...Field) bool {
	p := parsers.Get()
	defer parsers.Put(p)
	obj, ok := object(p, data)
	if !ok {
		return false
	}
	obj.Visit(func(k []byte, v *fastjson.Value) { // in order: of a repeated key the last counts, as in encoding/json
		if !ok {
			return
		}
		for _, f := range fields {
			switch {
			case string(k) == f.Key:
				ok = v.Type() == fastjson.TypeNull || read(v, f.Into)
				return
			case strings.EqualFold(string(k), f.Key):
				ok = false
				return
			}
		}
	})
	return ok
}

// Members returns the members of the object data, each value as JSON
// (fastjson's encoding of it, from which json.Unmarshal reads what it
// reads from data), a repeated key's last; false as for Decode, when data
// is not an object, or when a key is not UTF-8 (encoding/json replaces
// what is not).
func Members(data []byte) (map[string][]byte, bool) {
	p := parsers.Get()
	defer parsers.Put(p)
	obj, ok := object(p, data)
	if !ok {
		return nil, false
	}
	out := make(map[string][]byte, obj.Len())
	obj.Visit(func(k []byte, v *fastjson.Value) {
		ok = ok && utf8.Valid(k)
		out[string(k)] = v.MarshalTo(nil)
	})
	return out, ok
}

// Value reads the one JSON value data into into (as Field.Into takes, or a
// *int64 or *float64) as json.Unmarshal does; false where it leaves data
// to it (as Decode), null included.
func Value(data []byte, into any) bool {
	if HasSurrogateEscape(data) || hasUnknownEscape(data) {
		return false
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(data)
	return err == nil && v.Type() != fastjson.TypeNull && read(v, into)
}

// object parses data with p as one object, false where fastjson could read
// it otherwise than encoding/json.
func object(p *fastjson.Parser, data []byte) (*fastjson.Object, bool) {
	if HasSurrogateEscape(data) || hasUnknownEscape(data) {
		return nil, false
	}
	v, err := p.ParseBytes(data)
	if err != nil {
		return nil, false
	}
	obj, err := v.Object()
	return obj, err == nil
}

func read(v *fastjson.Value, into any) bool {
	switch dst := into.(type) {
	case *string:
		return readString(v, dst)
	case *bool:
		b, err := v.Bool()
		*dst = b
		return err == nil
	case *int:
		n, ok := integer(v)
		i, err := strconv.Atoi(string(n))
		*dst = i
		return ok && err == nil
	case *int64:
		n, ok := integer(v)
		i, err := strconv.ParseInt(string(n), 10, 64)
		*dst = i
		return ok && err == nil
	case *uint64:
		n, ok := integer(v)
		u, err := strconv.ParseUint(string(n), 10, 64)
		*dst = u
		return ok && err == nil
	case *float64:
		if v.Type() != fastjson.TypeNumber {
			return false
		}
		f, err := strconv.ParseFloat(string(v.MarshalTo(nil)), 64) // encoding/json's own parse
		*dst = f
		return err == nil
	case *[]string:
		arr, err := v.Array()
		if err != nil {
			return false
		}
		out := make([]string, len(arr))
		for i, e := range arr {
			if !readString(e, &out[i]) {
				return false
			}
		}
		*dst = out
		return true
	}
	return false
}

func readString(v *fastjson.Value, dst *string) bool {
	b, err := v.StringBytes()
	if err != nil || !utf8.Valid(b) { // encoding/json replaces what is not UTF-8
		return false
	}
	*dst = string(b)
	return true
}

// integer is the text of a plain integer (no fraction or exponent, which
// encoding/json refuses for an integer field).
func integer(v *fastjson.Value) ([]byte, bool) {
	if v.Type() != fastjson.TypeNumber {
		return nil, false
	}
	n := v.MarshalTo(nil)
	return n, bytes.IndexAny(n, ".eE") < 0
}

// hasUnknownEscape reports whether data holds a backslash that no JSON
// escape follows (encoding/json refuses it; fastjson keeps it as text).
// Outside strings JSON has no backslash, so any there counts too.
func hasUnknownEscape(data []byte) bool {
	for {
		i := bytes.IndexByte(data, '\\')
		if i < 0 {
			return false
		}
		if i+1 >= len(data) || strings.IndexByte(`"\/bfnrtu`, data[i+1]) < 0 {
			return true
		}
		data = data[i+2:] // past the escaped character
	}
}

// HasSurrogateEscape reports whether data holds an escaped UTF-16
// surrogate (\uD800–\uDFFF), which encoding/json never writes.
func HasSurrogateEscape(data []byte) bool {
	for {
		i := bytes.IndexByte(data, '\\')
		if i < 0 || i+3 >= len(data) {
			return false
		}
		if data[i+1] == 'u' && (data[i+2] == 'd' || data[i+2] == 'D') && strings.IndexByte("89abcdefABCDEF", data[i+3]) >= 0 {
			return true
		}
		data = data[i+2:] // past the escaped character
	}
}
