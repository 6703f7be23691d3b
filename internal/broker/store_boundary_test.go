package broker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrokerSpeaksTheStoresDomain: the broker reads and writes the store
// through its typed methods only; the raw key-value calls of store.Txn
// (Get, Set, SetTTL, Delete, Has, Scan, Keys) are the store's own.
func TestBrokerSpeaksTheStoresDomain(t *testing.T) {
	raw := map[string]bool{"Get": true, "Set": true, "SetTTL": true, "Delete": true, "Has": true, "Scan": true, "Keys": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "txn" && raw[sel.Sel.Name] {
				t.Errorf("%s: txn.%s: a raw store call in the broker; add a typed method to internal/store", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
