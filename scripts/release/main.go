// Command release writes a file-based Go module proxy serving the modules
// of a tree at one version, as the go command would download them once that
// version is tagged:
//
//	go run ./scripts/release -version v0.1.0 -out /tmp/proxy DIR...
//
// Each DIR holds a go.mod; its module is written to the proxy under
// -version (list, .info, .mod and the .zip golang.org/x/mod/zip makes, which
// leaves out nested modules as the go command does). Use it with
// GOPROXY=file:///tmp/proxy and the unpublished versions' checksums kept out
// of the checksum database (GONOSUMDB).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to serve every module at (required)")
	out := flag.String("out", "", "the proxy's directory (required)")
	flag.Parse()
	if err := write(*out, *version, flag.Args()); err != nil {
		log.Fatal(err)
	}
}

// write adds the modules of dirs to the proxy in out at version.
func write(out, version string, dirs []string) error {
	if out == "" || !semver.IsValid(version) || len(dirs) == 0 {
		return errors.New("usage: release -version vX.Y.Z -out DIR MODULEDIR...")
	}
	for _, dir := range dirs {
		gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			return err
		}
		path := modfile.ModulePath(gomod)
		if path == "" {
			return fmt.Errorf("%s/go.mod names no module", dir)
		}
		escaped, err := module.EscapePath(path)
		if err != nil {
			return err
		}
		at := filepath.Join(out, escaped, "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
		info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
		if err := os.WriteFile(filepath.Join(at, version+".info"), info, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(at, version+".mod"), gomod, 0o644); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(at, version+".zip"))
		if err != nil {
			return err
		}
		err = zip.CreateFromDir(f, module.Version{Path: path, Version: version}, dir)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("zipping %s: %w", path, err)
		}
		list, _ := os.ReadFile(filepath.Join(at, "list"))
		versions := strings.Fields(string(list))
		if !slices.Contains(versions, version) {
			versions = append(versions, version)
		}
		if err := os.WriteFile(filepath.Join(at, "list"), []byte(strings.Join(versions, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}
