// Command imports imports the runtime packages and reports how
// http.DefaultServeMux answers a request for the runtime's profiles: 404
// when importing them registered nothing there.
package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	_ "github.com/tendhq/tend/controller"
	_ "github.com/tendhq/tend/driver"
	_ "github.com/tendhq/tend/manager"
)

func main() {
	rec := httptest.NewRecorder()
	http.DefaultServeMux.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/", nil))
	fmt.Print(rec.Code)
}
