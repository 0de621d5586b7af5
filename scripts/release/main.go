// Command release writes a file-based Go module proxy serving the modules
// of a tree at one version, as the go command would download them once that
// version is tagged:
//
//	go run ./scripts/release -version v0.1.0 -out /tmp/proxy DIR...
//
// Each DIR holds a go.mod; its module is written to the proxy under
// -version (list, .info, .mod and the .zip golang.org/x/mod/zip makes, which
// leaves out nested modules as the go command does; with -license, a
// module directory without a LICENSE gets the repository's, as the go command
// gives a module in a subdirectory). Use it with
// GOPROXY=file:///tmp/proxy and the unpublished versions' checksums kept out
// of the checksum database (GONOSUMDB).
//
// With -verify REPO, it instead checks that the modules the proxy serves are
// byte for byte what the go command will download once the tags are pushed:
// each DIR is then a module's directory relative to the git repository REPO,
// tagged at -version as the go command expects (v1.2.3, or DIR/v1.2.3), and
// the checksum of the zip made from the tag must equal the proxy's.
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
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to serve every module at (required)")
	out := flag.String("out", "", "the proxy's directory (required)")
	repo := flag.String("verify", "", "compare the proxy's modules with the tags of this git repository")
	license := flag.String("license", "", "the repository's LICENSE, for modules without one")
	flag.Parse()
	var err error
	if *repo != "" {
		err = verify(*out, *version, *repo, flag.Args())
	} else {
		err = write(*out, *version, *license, flag.Args())
	}
	if err != nil {
		log.Fatal(err)
	}
}

// writeZip writes the zip of module m, whose files are in dir, to file. When
// dir has no LICENSE and license is not empty, the zip holds license as its
// LICENSE, as the go command zips a module in a repository's subdirectory.
func writeZip(file string, m module.Version, dir, license string) error {
	own := filepath.Join(dir, "LICENSE")
	if _, err := os.Lstat(own); errors.Is(err, os.ErrNotExist) && license != "" {
		data, err := os.ReadFile(license)
		if err != nil {
			return err
		}
		if err := os.WriteFile(own, data, 0o644); err != nil {
			return err
		}
		defer os.Remove(own)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	err = zip.CreateFromDir(f, m, dir)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// verify compares the modules of the proxy in out at version with the zips
// the go command makes from the git tags of repo, for the modules in the
// subdirectories dirs of repo.
func verify(out, version, repo string, dirs []string) error {
	if out == "" || !semver.IsValid(version) || len(dirs) == 0 {
		return errors.New("usage: release -verify REPO -version vX.Y.Z -out DIR SUBDIR...")
	}
	for _, dir := range dirs {
		dir = filepath.ToSlash(filepath.Clean(dir))
		gomod, err := os.ReadFile(filepath.Join(repo, dir, "go.mod"))
		if err != nil {
			return err
		}
		path := modfile.ModulePath(gomod)
		escaped, err := module.EscapePath(path)
		if err != nil {
			return err
		}
		served, err := dirhash.HashZip(filepath.Join(out, escaped, "@v", version+".zip"), dirhash.Hash1)
		if err != nil {
			return err
		}
		tag, subdir := version, ""
		if dir != "." {
			tag, subdir = dir+"/"+version, dir
		}
		tmp, err := os.CreateTemp("", "tag-*.zip")
		if err != nil {
			return err
		}
		err = zip.CreateFromVCS(tmp, module.Version{Path: path, Version: version}, repo, tag, subdir)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		var tagged string
		if err == nil {
			tagged, err = dirhash.HashZip(tmp.Name(), dirhash.Hash1)
		}
		os.Remove(tmp.Name())
		if err != nil {
			return fmt.Errorf("zipping %s from tag %s: %w", path, tag, err)
		}
		if tagged != served {
			return fmt.Errorf("%s@%s: the tag %s zips to %s, but the go.sum files record %s", path, version, tag, tagged, served)
		}
		fmt.Printf("%s@%s %s (tag %s)\n", path, version, tagged, tag)
	}
	return nil
}

// write adds the modules of dirs to the proxy in out at version. A module
// without a LICENSE file gets license, if not empty.
func write(out, version, license string, dirs []string) error {
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
		if err := writeZip(filepath.Join(at, version+".zip"), module.Version{Path: path, Version: version}, dir, license); err != nil {
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
