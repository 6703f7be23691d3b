package agentsession

import (
	"testing"

	"github.com/intercom-dev/intercom/internal/jsonfields/fieldstest"
)

// Every field of Binding is read by the hook's reflection-free decoder: a
// field added to the struct and not to decodeBindingFields fails here.
func TestBindingFieldsDecodeEveryField(t *testing.T) {
	fieldstest.Check(t, decodeBindingFields)
}
