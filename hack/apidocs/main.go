package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	apiDir := flag.String("api", "api/v1alpha1", "the directory of the API package")
	out := flag.String("out", "docs/api.md", "the file to write the reference to")
	flag.Parse()
	if err := run(*apiDir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(apiDir, out string) error {
	doc, err := generate(apiDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("cannot write the reference: %w", err)
	}
	return nil
}

// generate returns the reference of the API package in dir.
func generate(dir string) (string, error) {
	a, err := load(dir)
	if err != nil {
		return "", err
	}
	return render(a)
}
