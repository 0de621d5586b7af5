// Command server is the program of the Docker backend's workspace image: the
// container ws-{id} serving its home volume over HTTP, as the embedded
// backend's container processes do (package local's Handler).
//
// The image holds this program alone, built statically (CGO_ENABLED=0), so
// it runs on an empty root file system; see docker.ImportImage.
//
//	server -name ws-w1 -home /home/workspace -addr 127.0.0.1:8080
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/tendhq/tend/examples/workspace/local"
)

func main() {
	name := flag.String("name", "", "the container's name, which the health check answers with")
	home := flag.String("home", "", "the home directory to serve")
	addr := flag.String("addr", "127.0.0.1:8080", "the address to listen on")
	flag.Parse()
	if err := run(*name, *home, *addr); err != nil {
		fmt.Fprintln(os.Stderr, *name+":", err)
		os.Exit(1)
	}
}

func run(name, home, addr string) error {
	if name == "" || home == "" {
		return fmt.Errorf("-name and -home are required")
	}
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: local.Handler(name, root), ReadHeaderTimeout: 5 * time.Second}
	return srv.ListenAndServe()
}
