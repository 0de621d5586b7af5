// Package docs keeps the repository's documentation true. It exports nothing:
// its tests check docs/*.md, README.md and the READMEs of the examples and
// backends, and go generate rewrites what they generate.
//
// # What the tests check
//
//   - Every go code block of docs/ and README.md compiles (see
//     docs/index.md, "How these pages are checked", for the conventions a
//     block follows). A program followed by an output block is run and its
//     standard output compared; test files are run with go test.
//   - Every relative link resolves: to a file or directory of the
//     repository, and for a #fragment, to a heading of the page it names.
//     Every page of docs/ is listed in docs/index.md.
//   - Every diagram (a mermaid or dot block) lies between generated markers,
//     and docs/diagrams.md holds exactly the diagrams the examples' machines
//     generate.
//
// The snippets are built in a temporary workspace that uses the repository's
// modules, so they may import any of them while the core module's
// dependencies stay as they are. Run the checks with
//
//	go test ./docs          # in the examples module
//
// and regenerate docs/diagrams.md with go generate ./docs.
package docs

//go:generate go test -run ^TestDiagrams$ -update .
