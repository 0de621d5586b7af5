package main

import (
	"flag"
	"fmt"
	"os"
)

//go:generate go run . -results ../../results -doc ../../../docs/benchmarks.md

func main() {
	results := flag.String("results", "results", "directory holding the raw NAME.txt files")
	doc := flag.String("doc", "../docs/benchmarks.md", "markdown file whose generated sections are rewritten")
	flag.Parse()
	if err := run(*results, *doc); err != nil {
		fmt.Fprintln(os.Stderr, "benchdoc:", err)
		os.Exit(1)
	}
}

// run rewrites the generated sections of the markdown file at doc from the
// raw results in dir.
func run(dir, doc string) error {
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	updated, err := generate(tables, dir, string(old))
	if err != nil {
		return err
	}
	if updated == string(old) {
		return nil
	}
	return os.WriteFile(doc, []byte(updated), 0o644)
}
