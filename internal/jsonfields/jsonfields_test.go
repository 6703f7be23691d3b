package jsonfields

import (
	"bytes"
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

// checkMembers: where Members reads data, json.Unmarshal into a map of
// raw values reads it too, to the same keys, each value decoding to the
// same (of invalid JSON Members may read more).
func checkMembers(t *testing.T, data []byte) {
	got, ok := Members(data)
	if !ok {
		return
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(data, &want); err != nil {
		if json.Valid(data) {
			t.Fatalf("Members read %q, which json.Unmarshal refuses: %v", data, err)
		}
		return
	}
	if len(got) != len(want) {
		t.Fatalf("Members(%q) has %d keys, json.Unmarshal %d", data, len(got), len(want))
	}
	for k, w := range want {
		a, errA := decodeAny(got[k])
		b, errB := decodeAny(w)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("Members(%q)[%q] = %s (%v), json.Unmarshal's %s (%v)", data, k, got[k], errA, w, errB)
		}
	}
}

// decodeAny is data as a value, its numbers as written (1e700 is one).
func decodeAny(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// checkValue: where Value reads data into each type it takes,
// json.Unmarshal reads it too and to the same.
func checkValue(t *testing.T, data []byte) {
	for _, pair := range [][2]any{
		{new(string), new(string)}, {new(bool), new(bool)}, {new(int), new(int)}, {new(int64), new(int64)},
		{new(uint64), new(uint64)}, {new(float64), new(float64)}, {new([]string), new([]string)},
	} {
		if !Value(data, pair[0]) {
			continue
		}
		if err := json.Unmarshal(data, pair[1]); err != nil {
			if json.Valid(data) {
				t.Fatalf("Value read %q into %T, which json.Unmarshal refuses: %v", data, pair[0], err)
			}
			continue
		}
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Fatalf("Value(%q) into %T = %v, json.Unmarshal %v", data, pair[0], reflect.ValueOf(pair[0]).Elem(), reflect.ValueOf(pair[1]).Elem())
		}
	}
}

var valueSeeds = []string{`"x"`, `"a\u00e9\n"`, `true`, `false`, `null`, `0`, `-3`, `1.5`, `1e3`, `1e700`, `18446744073709551615`,
	`9223372036854775808`, `["a","b"]`, `[]`, `[1]`, `{}`, `"\ud800"`, ` 7 `, `0.1`, `123456789.123456789`}

func TestMembersAndValueAgreeWithUnmarshal(t *testing.T) {
	for _, s := range append(seeds, `{"a":{"b":[1,"x",null,true]},"a":2,"k\u00e9y":"v\n"}`, `{}`, `null`, `{"x":01}`, "{\"\xff\":1}", `{"0":1e700}`) {
		checkMembers(t, []byte(s))
	}
	if m, ok := Members([]byte(`{"a":1,"b":"two","a":3}`)); !ok || string(m["a"]) != "3" || string(m["b"]) != `"two"` {
		t.Fatalf("Members: %q %v", m, ok)
	}
	for _, s := range []string{`null`, `[1]`, `{"x":"a\qb"}`, `{"x":"\ud800"}`, "{\"\xff\":1}"} {
		if _, ok := Members([]byte(s)); ok {
			t.Errorf("Members read %q, which it must leave to encoding/json", s)
		}
	}
	read := 0
	for _, s := range valueSeeds {
		checkValue(t, []byte(s))
		var f float64
		if Value([]byte(s), &f) {
			read++
		}
	}
	if read < 8 {
		t.Fatalf("Value read only %d of the numbers", read)
	}
	var n int64
	if Value([]byte(`null`), &n) || Value([]byte(`1.5`), &n) || Value([]byte(`"1"`), &n) {
		t.Fatal("Value read a null, a fraction or a string as an int64")
	}
}

func FuzzMembers(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkMembers(t, data) })
}

func FuzzValue(f *testing.F) {
	for _, s := range valueSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkValue(t, data) })
}
