// Package reservations holds the rules of reservations that do not need the
// broker: which reserved paths overlap, which paths a harness's file-editing
// tool call touches, how a path given on a command line or in a hook becomes
// a path relative to the project root, and the pre-tool decision the hooks
// take (pretool.go). The leases themselves live in the broker
// (internal/broker/reservations.go).
package reservations

import (
	"path"
	"strings"
)

// Overlap reports whether two reservation paths (each a path, a directory
// or a glob, relative to one project root) can name a common file. A path
// covers everything under it; ** matches any number of segments. Two globs
// overlap when they might: a segment with a glob character in both is
// taken to overlap (conservative: a reservation errs towards blocking).
func Overlap(a, b string) bool {
	return overlapSegs(split(a), split(b))
}

func split(p string) []string {
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

func overlapSegs(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true // one is a directory that holds the rest of the other
	}
	if a[0] == "**" {
		for i := 0; i <= len(b); i++ {
			if overlapSegs(a[1:], b[i:]) {
				return true
			}
		}
		return false
	}
	if b[0] == "**" {
		return overlapSegs(b, a)
	}
	return segsCompatible(a[0], b[0]) && overlapSegs(a[1:], b[1:])
}

func segsCompatible(a, b string) bool {
	if a == b {
		return true
	}
	if ok, _ := path.Match(a, b); ok {
		return true
	}
	if ok, _ := path.Match(b, a); ok {
		return true
	}
	return hasMeta(a) && hasMeta(b)
}

func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[\\") }
