// Command gen generates the AHP wire types of package wire from the AHP JSON
// schemas.
//
// It reads every *.schema.json in -schema, merges their $defs, applies the
// supplements in overrides.json (enum values and shapes the TypeScript-derived
// schemas lose) and writes enums.gen.go, types.gen.go and unions.gen.go into
// -out, gofmt'ed. Run it with `go generate` in the package it writes.
package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
)

//go:embed overrides.json
var overridesJSON []byte

func main() {
	schemaDir := flag.String("schema", "../shared/ahp/0.3.0/schema", "directory of *.schema.json; a relative path is taken from the repository root (the directory holding go.mod)")
	outDir := flag.String("out", ".", "output directory")
	flag.Parse()
	if err := run(*schemaDir, *outDir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(schemaDir, outDir string) error {
	if !filepath.IsAbs(schemaDir) {
		root, err := repoRoot()
		if err != nil {
			return err
		}
		schemaDir = filepath.Join(root, schemaDir)
	}
	defs, err := loadSchemas(schemaDir)
	if err != nil {
		return err
	}
	var ov overrides
	if err := json.Unmarshal(overridesJSON, &ov); err != nil {
		return fmt.Errorf("reading overrides.json: %w", err)
	}
	g, err := newGenerator(defs, &ov)
	if err != nil {
		return err
	}
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
			_ = os.WriteFile(filepath.Join(outDir, name+".broken"), []byte(src), 0o644)
			return fmt.Errorf("formatting %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(outDir, name), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
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
