package kongrun

import (
	"reflect"
	"time"

	"github.com/alecthomas/kong"

	"github.com/intercom-dev/intercom/internal/duration"
)

// DurationMapper decodes every time.Duration flag through the one duration
// rule (package duration). A flag's `zero:"meaning"` tag documents what 0
// means; without it 0 is refused. A flag tagged `offset:"true"` is a signed
// offset from now (duration.ParseOffset). A negative value is read as a value (and
// refused by the rule), not as a short flag: `--timeout -1s` says what is
// wrong with -1s.
func DurationMapper() kong.Option {
	return kong.TypeMapper(reflect.TypeFor[time.Duration](), kong.MapperFunc(decodeDuration))
}

func decodeDuration(ctx *kong.DecodeContext, target reflect.Value) error {
	var raw string
	if tok := ctx.Scan.Peek(); tok.Type == kong.UntypedToken && negativeNumber(tok.String()) {
		raw = ctx.Scan.Pop().String()
	} else {
		t, err := ctx.Scan.PopValue("duration")
		if err != nil {
			return err
		}
		raw = t.String()
	}
	parse := func(s string) (time.Duration, error) { return duration.Parse(s, ctx.Value.Tag.Get("zero")) }
	if ctx.Value.Tag.Get("offset") == "true" {
		parse = duration.ParseOffset
	}
	d, err := parse(raw)
	if err != nil {
		return err
	}
	target.Set(reflect.ValueOf(d))
	return nil
}

func negativeNumber(s string) bool {
	return len(s) > 1 && s[0] == '-' && (s[1] >= '0' && s[1] <= '9' || s[1] == '.')
}
