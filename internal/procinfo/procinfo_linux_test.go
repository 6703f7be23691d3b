package procinfo

import "testing"

func TestParseStat(t *testing.T) {
	t.Parallel()
	rest := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 4242 0" // fields 5-21, 22 (start), 23
	in, err := parseStat(7, "7 (a) b) (c) S 3"+rest)
	if err != nil || in.Name != "a) b) (c" || in.Parent != 3 || in.Zombie || in.Start != 4242 {
		t.Fatalf("parseStat = %+v, %v", in, err)
	}
	if in, _ := parseStat(7, "7 (z) Z 1"+rest); !in.Zombie {
		t.Fatal("state Z not a zombie")
	}
	for _, bad := range []string{"", "7 no parens S 1" + rest, "7 (x) S 1 2 3", "7 (x) S p" + rest, "7 (x) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 x 0"} {
		if _, err := parseStat(7, bad); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}
