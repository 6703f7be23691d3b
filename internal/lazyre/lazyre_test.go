package lazyre

import "testing"

func TestCompiledOnceOnFirstUse(t *testing.T) {
	bad := New(`(`) // invalid: compiling it would panic, and nothing compiles it yet
	_ = bad
	re := New(`^a+$`)
	if !re().MatchString("aaa") || re().MatchString("ab") {
		t.Fatal("the expression does not match as written")
	}
	if re() != re() {
		t.Fatal("compiled again on a second use")
	}
}
