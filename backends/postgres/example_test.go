package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/store"
)

// This example needs a PostgreSQL server, so it is compiled but not run by
// go test; TestExample runs the same code against the test server.
func Example() {
	ctx := context.Background()
	s, err := postgres.New(ctx, postgres.Config{
		URL:    os.Getenv("TEND_POSTGRES_URL"), // postgres://user@host:5432/db
		Schema: "tend",
		Kinds:  []string{"ApiGateway"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := example(ctx, s, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// example creates a document, watches it and writes its status.
func example(ctx context.Context, s *postgres.Store, out io.Writer) error {
	list, err := s.List(ctx, "ApiGateway", store.ListOptions{})
	if err != nil {
		return err
	}
	w, err := s.Watch(ctx, "ApiGateway", list.Revision)
	if err != nil {
		return err
	}
	defer w.Close()

	d, err := s.Create(ctx, store.Document{
		Meta: store.Meta{Kind: "ApiGateway", Key: "team-a/gw-1"},
		Spec: []byte(`{"state":"Running"}`),
	})
	if err != nil {
		return err
	}
	d.Status = []byte(`{"phase":"Creating"}`)
	if _, err := s.UpdateStatus(ctx, d); err != nil {
		return err
	}
	for range 2 {
		e, err := w.Next(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%v %s spec=%s status=%s\n", e.Type, e.Document.Meta.Key, e.Document.Spec, e.Document.Status)
	}
	return nil
}

func TestExample(t *testing.T) {
	s := newStore(t, postgres.Config{Kinds: []string{"ApiGateway"}})
	var out strings.Builder
	if err := example(t.Context(), s, &out); err != nil {
		t.Fatal(err)
	}
	const want = `Added team-a/gw-1 spec={"state":"Running"} status=
Modified team-a/gw-1 spec={"state":"Running"} status={"phase":"Creating"}
`
	if out.String() != want {
		t.Fatalf("example printed\n%s\nwant\n%s", out.String(), want)
	}
}
