// Package pi holds intercom's Pi package (a TypeScript extension and its
// package.json), embedded so that `intercom install pi` can write it into
// the user's Pi agent directory.
package pi

import "embed"

// Files are the package's files, by name.
//
//go:embed package.json index.ts compose.ts
var Files embed.FS

// Names are the files install writes, in order.
var Names = []string{"package.json", "index.ts", "compose.ts"}
