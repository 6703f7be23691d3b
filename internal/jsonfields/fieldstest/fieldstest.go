// Package fieldstest checks a jsonfields decoder against encoding/json for
// a struct type, so that a field added to the struct and not to the list of
// fields its decoder reads fails a test instead of being dropped silently
// on the hook's path.
package fieldstest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Check fills every exported field of the struct *v with a non-zero value,
// encodes it with encoding/json, and requires decode to read it back whole
// (and to report that it did).
func Check[T any](t *testing.T, decode func([]byte) (T, bool)) {
	t.Helper()
	var want T
	rv := reflect.ValueOf(&want).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		if !rv.Type().Field(i).IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString("v-" + rv.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(7 + i))
		case reflect.Uint64:
			f.SetUint(uint64(9 + i))
		case reflect.Slice:
			if f.Type().Elem().Kind() != reflect.String {
				t.Fatalf("field %s: a slice of %s is not what jsonfields reads", rv.Type().Field(i).Name, f.Type().Elem())
			}
			f.Set(reflect.ValueOf([]string{"a", "b"}))
		default:
			t.Fatalf("field %s: kind %s is not what jsonfields reads", rv.Type().Field(i).Name, f.Kind())
		}
	}
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := decode(data)
	if !ok {
		t.Fatalf("the fast decoder left %s to encoding/json", data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the fast decoder read %+v of %s, encoding/json reads %+v: a field missing from its list?", got, data, want)
	}
}
