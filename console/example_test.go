package console_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/console"
	"github.com/tendhq/tend/history"
)

// The console mounted beside a program's own handlers: everyone who
// reaches it reads, and only the on-call operators act, under their names.
func Example() {
	kinds := append([]string{"Lamp"}, history.Kinds("Lamp")...)
	st, err := memory.New(memory.Config{Kinds: append(kinds, registry.Kinds()...)})
	if err != nil {
		panic(err)
	}
	c, err := console.New(console.Config{
		Store:  st,
		Prefix: "/console/",
		Authorize: func(r *http.Request, a console.Action) error {
			if r.Header.Get("X-Group") != "on-call" { // as the program's proxy authenticated it
				return errors.New("only the on-call operators act")
			}
			return nil
		},
		Actor: func(r *http.Request) string { return r.Header.Get("X-User") },
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", c)
	// http.ListenAndServe("127.0.0.1:8080", mux)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/", nil))
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), "No kind is registered yet"))

	// A form posted without the page's session token is refused.
	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/console/kinds/Lamp/objects/hall", strings.NewReader("action=pause"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	// Output:
	// 200 true
	// 403
}

// Without Authorize the console is read-only.
func ExampleConfig_readOnly() {
	st, err := memory.New(memory.Config{Kinds: append([]string{"Lamp"}, registry.Kinds()...)})
	if err != nil {
		panic(err)
	}
	c, err := console.New(console.Config{Store: st})
	if err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/kinds/Lamp/objects/hall", strings.NewReader("action=pause")))
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	// Output:
	// 403 console: read-only: no action is authorized
}
