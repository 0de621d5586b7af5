// Package listentest reads what a demo serves on its -listen address: the
// probes, the metrics and a document's history. The demos' tests use it.
package listentest

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/tendhq/tend/controller"
)

// client opens a connection per request, so a request made after the demo
// stopped serving fails instead of reusing an open connection.
var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// Get returns the status code and body of GET base+path (base is
// "http://host:port"), or 0 and the error's text when the request fails.
func Get(base, path string) (int, string) {
	resp, err := client.Get(base + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// History asks base for the history of the document kind/key every 20 ms
// until it serves one with entries, and returns it; false if none came
// within the given time.
func History(base, kind, key string, within time.Duration) (controller.HistoryResponse, bool) {
	deadline := time.Now().Add(within)
	for {
		var hist controller.HistoryResponse
		if code, body := Get(base, "/history/"+kind+"/"+key); code == http.StatusOK &&
			json.Unmarshal([]byte(body), &hist) == nil && len(hist.Entries) > 0 {
			return hist, true
		}
		if time.Now().After(deadline) {
			return hist, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
