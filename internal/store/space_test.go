package store

import (
	"errors"
	"syscall"
	"testing"
)

// TestCheckSpaceTrustsNoReadingForTooMuch: right after a check that
// passed, one asking for more than the filesystem has still fails: the
// remembered reading only stands for writes it has room for.
func TestCheckSpaceTrustsNoReadingForTooMuch(t *testing.T) {
	t.Parallel()
	s, dir := openTemp(t)
	if err := s.CheckSpace(1 << 10); err != nil {
		t.Skipf("no room for a small write here: %v", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize) // Bsize is int64 on Linux, uint32 on macOS
	if err := s.CheckSpace(free); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("CheckSpace(all %d free bytes) just after a passing check: %v, want ENOSPC", free, err)
	}
	if err := s.CheckSpace(1 << 10); err != nil {
		t.Fatalf("small write after the refused one: %v", err)
	}
}
