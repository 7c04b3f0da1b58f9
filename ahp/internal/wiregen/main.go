// Command wiregen generates the AHP wire types of one protocol version from
// that version's JSON schemas.
//
// It reads every *.schema.json in -schema, merges their $defs, applies the
// supplements in -overrides (enum member names, shapes and types that the
// TypeScript-derived schemas lose; see overrides) and writes enums.gen.go,
// types.gen.go and unions.gen.go into -out, gofmt'ed. One generator serves
// every version so that a new protocol version is a regeneration with its own
// overrides file, not a new generator. Run it with `go generate` in the
// package it writes; each such package keeps its overrides.json beside it.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"go/token"
	"os"
	"path/filepath"
)

// config is what the command line chooses.
type config struct {
	schemaDir, overridesFile, outDir string
	// pkg is the package clause of the generated files.
	pkg string
	// version is the AHP version named in the generated comments.
	version string
}

func main() {
	var c config
	flag.StringVar(&c.schemaDir, "schema", "", "directory of *.schema.json; a relative path is taken from the repository root (the directory holding go.mod)")
	flag.StringVar(&c.overridesFile, "overrides", "overrides.json", "JSON file of supplements to the schemas; a relative path is taken from the working directory")
	flag.StringVar(&c.outDir, "out", ".", "output directory")
	flag.StringVar(&c.pkg, "pkg", "wire", "package name of the generated files")
	flag.StringVar(&c.version, "version", "", "AHP version the schemas describe (default: the name of the schema directory's parent, e.g. 0.7.0)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.schemaDir == "" {
		return errors.New("-schema is required")
	}
	if !token.IsIdentifier(c.pkg) {
		return fmt.Errorf("-pkg %q is not a Go identifier", c.pkg)
	}
	if !filepath.IsAbs(c.schemaDir) {
		root, err := repoRoot()
		if err != nil {
			return err
		}
		c.schemaDir = filepath.Join(root, c.schemaDir)
	}
	if c.version == "" {
		// The spec data is laid out as <version>/schema.
		c.version = filepath.Base(filepath.Dir(filepath.Clean(c.schemaDir)))
	}
	defs, err := loadSchemas(c.schemaDir)
	if err != nil {
		return err
	}
	ovJSON, err := os.ReadFile(c.overridesFile)
	if err != nil {
		return fmt.Errorf("reading the overrides: %w", err)
	}
	var ov overrides
	dec := json.NewDecoder(bytes.NewReader(ovJSON))
	// A misspelt section would otherwise be ignored without a word.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ov); err != nil {
		return fmt.Errorf("reading %s: %w", c.overridesFile, err)
	}
	g, err := newGenerator(defs, &ov)
	if err != nil {
		return err
	}
	g.pkg, g.version = c.pkg, c.version
	if err := g.build(); err != nil {
		return err
	}
	files := map[string]string{
		"enums.gen.go":  g.emitEnums(),
		"types.gen.go":  g.emitTypes(),
		"unions.gen.go": g.emitUnions(),
	}
	for name, src := range files {
		out, err := format.Source([]byte(src))
		if err != nil {
			// Write the unformatted text next to the target so the bug can be found.
			_ = os.WriteFile(filepath.Join(c.outDir, name+".broken"), []byte(src), 0o644)
			return fmt.Errorf("formatting %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(c.outDir, name), out, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found above the working directory; pass an absolute -schema")
		}
		dir = parent
	}
}
