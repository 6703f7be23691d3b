package wire

import (
	stdjson "encoding/json"
	"reflect"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// fill sets every field of v (recursively) to a non-zero value: strings
// with characters JSON escapes, one element in slices and maps, pointers
// allocated, times with nanoseconds.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("a<b>&\"c\"\n\u2028é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-42)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(42)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 4 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		if depth > 4 {
			return
		}
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 11, 30, 0, 123456789, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// TestCodecsAgree: the broker and pkg/intercom encode and decode with
// goccy/go-json, other programs may use encoding/json. Every request and
// reply type is written to the same bytes by both and read back alike,
// filled and empty.
func TestCodecsAgree(t *testing.T) {
	types := []any{
		Message{}, SendRequest{}, AckRequest{}, RegisterRequest{}, InboxRequest{}, ListRequest{},
		Reply[SendReply]{}, Reply[AckReply]{}, Reply[RegisterReply]{}, Reply[InboxReply]{},
		Reply[InboxWaitReply]{}, Reply[ListReply]{}, Reply[PendingReply]{}, Reply[Trace]{},
		Reply[Stats]{}, Reply[Session]{}, Reply[Empty]{}, Reply[PublishReply]{}, Reply[SubscribeReply]{},
		Reply[TopicsReply]{}, Reply[BridgeStatusReply]{}, Reply[BridgeAckReply]{}, Reply[BridgePurgeReply]{},
		Reply[BridgeTopicReply]{}, AskEvent{},
	}
	for _, zero := range types {
		typ := reflect.TypeOf(zero)
		full := reflect.New(typ)
		fill(full.Elem(), 0)
		for _, v := range []any{zero, full.Elem().Interface()} {
			want, err := stdjson.Marshal(v)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			if string(got) != string(want) {
				t.Fatalf("%s encodes differently:\n goccy %s\n std   %s", typ, got, want)
			}
			back := reflect.New(typ)
			if err := json.Unmarshal(want, back.Interface()); err != nil {
				t.Fatalf("%s: goccy cannot read %s: %v", typ, want, err)
			}
			if again, _ := stdjson.Marshal(back.Elem().Interface()); string(again) != string(want) {
				t.Fatalf("%s decodes differently: %s, want %s", typ, again, want)
			}
		}
	}
}
