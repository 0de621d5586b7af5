// Package listentest reads what a demo serves on its -listen address: the
// probes, the metrics, a document's history and the web console. The
// demos' tests use it.
package listentest

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/tendhq/tend/history"
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
func History(base, kind, key string, within time.Duration) (history.Response, bool) {
	deadline := time.Now().Add(within)
	for {
		var hist history.Response
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

// Post returns the status code and body of a POST of form to base+path,
// without following a redirect, or 0 and the error's text when the request
// fails.
func Post(base, path string, form url.Values) (int, string) {
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ConsoleLists asks base for the console's page of kind (served under
// /console/) every 20 ms until it lists the document key, and returns the
// page; false if none did within the given time.
func ConsoleLists(base, kind, key string, within time.Duration) (string, bool) {
	deadline := time.Now().Add(within)
	for {
		code, body := Get(base, "/console/kinds/"+kind)
		if code == http.StatusOK && strings.Contains(body, `data-key="`+key+`"`) {
			return body, true
		}
		if time.Now().After(deadline) {
			return body, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// consoleToken finds the session token in a console page's action forms.
var consoleToken = regexp.MustCompile(`name="token" value="([^"]+)"`)

// ConsoleAct acts through the console as a browser does: it loads the
// console page base+path, in a session of its own, and posts form to it
// with the page's session token. It returns the status code and body of
// the answer, without following a redirect, or 0 and the error's text.
func ConsoleAct(base, path string, form url.Values) (int, string) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Timeout: client.Timeout, Transport: client.Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + path)
	if err != nil {
		return 0, err.Error()
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := consoleToken.FindSubmatch(page)
	if m == nil {
		return 0, "no session token in the page " + path + ": " + string(page)
	}
	form = url.Values(maps.Clone(form))
	form.Set("token", string(m[1]))
	resp, err = c.PostForm(base+path, form)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
