package local

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"
)

// ServeIfContainer runs the container when the process was started as one by
// [Instances], or the storage job when it was started as one by [Jobs], and
// never returns then; otherwise it returns at once. Call it first in main,
// and in TestMain of tests that start containers or jobs.
func ServeIfContainer() {
	runJob()
	name := os.Getenv(envName)
	if name == "" {
		return
	}
	if err := serve(name, os.Getenv(envHome), os.Getenv(envAddr)); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serve serves home until the parent goes away (stdin reaches EOF).
func serve(name, home, addrFile string) error {
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: Handler(name, root), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent holds the other end
		os.Exit(0)
	}()
	tmp := addrFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(ln.Addr().String()), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, addrFile); err != nil {
		return err
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler serves the home volume root as container name does: GET
// /.well-known/container answers with name (the health check), GET reads a
// file, PUT writes one. The Docker backend's container program serves it
// too.
func Handler(name string, root *os.Root) http.Handler {
	files := http.FileServerFS(root.FS())
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name)
	})
	mux.HandleFunc("PUT /", func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		if p == "" {
			http.Error(w, "a file path is needed", http.StatusBadRequest)
			return
		}
		if dir := path.Dir(p); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		f, err := root.Create(p)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, err = io.Copy(f, r.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	mux.Handle("GET /", files)
	return mux
}
