package hooks

import (
	"testing"

	"github.com/intercom-dev/intercom/internal/jsonfields/fieldstest"
)

// Every field of Input is read by the reflection-free decoder: a field
// added to the struct and not to Input.decode fails here.
func TestInputDecodeEveryField(t *testing.T) {
	fieldstest.Check(t, func(data []byte) (Input, bool) {
		var in Input
		ok := in.decode(data)
		return in, ok
	})
}
