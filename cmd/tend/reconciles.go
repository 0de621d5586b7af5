package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tendhq/tend/manager"
)

// lastReconciles reads the last reconciles of the document kind/key from
// the handler of a manager (manager.Manager.Handler) at base.
func lastReconciles(ctx context.Context, base, kind, key string) ([]manager.Reconcile, error) {
	u := strings.TrimSuffix(base, "/") + "/reconciles?" + url.Values{"kind": {kind}, "key": {key}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("--manager %s: %w", base, err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--manager: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return nil, fmt.Errorf("--manager: GET %s: %s: %s", u, res.Status, strings.TrimSpace(string(msg)))
	}
	var body struct {
		Reconciles []manager.Reconcile `json:"reconciles"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("--manager: GET %s: %w", u, err)
	}
	return body.Reconciles, nil
}

// describeReconciles writes the "Last reconciles" section of describe:
// when each ran, why, how it ended and how long it took, oldest first.
func describeReconciles(w io.Writer, now time.Time, rs []manager.Reconcile) error {
	d := &describer{w: w, now: now}
	d.section("Last reconciles")
	if len(rs) == 0 {
		d.line("  none known to the manager")
		return d.err
	}
	t := newTable(w, "  STARTED", "TRIGGERS", "RESULT", "TOOK", "ID")
	for _, r := range rs {
		result := r.Result
		if r.Error != "" {
			result += ": " + r.Error
		}
		t.row("  "+age(now, r.Start), strings.Join(r.Triggers, ","), result, r.Duration.Round(time.Microsecond).String(), r.ReconcileID)
	}
	if err := t.flush(); err != nil {
		return err
	}
	return d.err
}
