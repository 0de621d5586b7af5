package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tendhq/tend/console"
)

// TestLastReconciles checks that a document's page shows the last
// reconciles the manager ran of it, with their triggers, when the console
// is given them, and no such section otherwise.
func TestLastReconciles(t *testing.T) {
	l := newLamps(t)
	l.create(t, "hall", "On")
	l.waitPhase(t, "hall", "Brightening")
	rs := l.mgr.Reconciles("Lamp", "hall")
	if len(rs) == 0 {
		t.Fatal("the manager recorded no reconcile of hall")
	}
	srv, client := serve(t, l, console.Config{Reconciles: l.mgr.Reconciles})
	code, body := get(t, client, srv.URL+"/console/kinds/Lamp/objects/hall")
	for _, want := range []string{"<h2>Last reconciles</h2>", "<td>spec 1</td>", "<td>" + rs[0].ReconcileID + "</td>"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("object page: %d, no %s in\n%s", code, want, body)
		}
	}
	srv, client = serve(t, l, console.Config{})
	if _, body := get(t, client, srv.URL+"/console/kinds/Lamp/objects/hall"); strings.Contains(body, "Last reconciles") {
		t.Error("a console given no Reconciles shows a Last reconciles section")
	}
}
