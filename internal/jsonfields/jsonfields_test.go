package jsonfields

import (
	"encoding/json"
	"reflect"
	"testing"
)

// sample has a field of each type Decode takes.
type sample struct {
	S    string   `json:"s"`
	B    bool     `json:"b"`
	I    int      `json:"i"`
	U    uint64   `json:"u"`
	List []string `json:"list"`
}

func decodeSample(data []byte) (sample, bool) {
	var v sample
	ok := Decode(data, Field{"s", &v.S}, Field{"b", &v.B}, Field{"i", &v.I}, Field{"u", &v.U}, Field{"list", &v.List})
	return v, ok
}

// check: where Decode reads data, json.Unmarshal reads it too, and the
// same (of invalid JSON Decode may read more).
func check(t *testing.T, data []byte) bool {
	got, ok := decodeSample(data)
	var want sample
	err := json.Unmarshal(data, &want)
	if !ok {
		return false
	}
	if err != nil {
		if json.Valid(data) {
			t.Fatalf("Decode read %q, which json.Unmarshal refuses: %v", data, err)
		}
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q) = %+v, json.Unmarshal %+v", data, got, want)
	}
	return true
}

var seeds = []string{
	`{"s":"x","b":true,"i":-3,"u":7,"list":["a","b"]}`,
	`{"s":"x","other":{"deep":[1,2,{"s":"no"}]},"s":"last"}`,
	`{"s":null,"b":null,"list":null}`,
	`{"S":"case"}`, `{"s":1}`, `{"i":1.5}`, `{"u":-1}`, `{"i":1e3}`, `{"list":[1]}`,
	`{"s":"\ud83d\ude00"}`, `{"s":"a\u00e9\n\"b"}`, "{\"s\":\"\xff\"}", `[]`, `"s"`, `{`, ``, `{"s":"x"} trailing`,
	`{"u":18446744073709551615}`, `{"i":99999999999999999999}`, `{"tool_response":{"stdout":"` + "\u2028" + `"}}`,
}

func TestDecodeAgreesWithUnmarshal(t *testing.T) {
	read := 0
	for _, s := range seeds {
		if check(t, []byte(s)) {
			read++
		}
	}
	if read < 5 {
		t.Fatalf("Decode read only %d of the seeds: it leaves too much to encoding/json", read)
	}
	for _, s := range []string{`{"S":"case"}`, `{"s":1}`, `{"i":1.5}`, `{"u":-1}`, `{"s":"\ud83d\ude00"}`, "{\"s\":\"\xff\"}", `[]`} {
		if _, ok := decodeSample([]byte(s)); ok {
			t.Errorf("Decode read %q, which it must leave to encoding/json", s)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data) })
}

// An escape JSON does not have is left to encoding/json (which refuses
// it), not read as text.
func TestUnknownEscapeLeftToUnmarshal(t *testing.T) {
	for _, s := range []string{`{"s":"a\qb"}`, `{"s":"a\x41"}`, `{"s":"x"}\`} {
		if _, ok := decodeSample([]byte(s)); ok {
			t.Errorf("Decode read %q", s)
		}
	}
	if v, ok := decodeSample([]byte(`{"s":"a\\q\/\u00e9\n"}`)); !ok || v.S != "a\\q/é\n" {
		t.Errorf("Decode of JSON's own escapes: %+v %v", v, ok)
	}
}
