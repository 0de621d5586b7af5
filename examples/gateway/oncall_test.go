package main

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tendhq/tend/oncall"
)

// TestListenOncall plays the scenario with -listen and $TEND_TOKEN: the
// on-call API serves tend --server, for the token's holders only.
func TestListenOncall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := options{Gateways: 5, Delay: 200 * time.Millisecond, Timeout: time.Minute, Listener: ln, Token: "demo-token"}
	done := make(chan error, 1)
	go func() {
		_, err := run(context.Background(), opts, io.Discard)
		done <- err
	}()
	url := "http://" + ln.Addr().String() + "/oncall/"
	api, _ := oncall.NewRemote(oncall.RemoteConfig{URL: url, Token: "demo-token", Actor: "tester"})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var v oncall.View
	// Served: the document is there and its kind's machine is recorded
	// (actions apply only where a machine drives).
	for {
		if v, err = api.Get(ctx, "ApiGateway", "gw-01"); err == nil {
			if _, err = api.Registration(ctx, "ApiGateway"); err == nil {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("gw-01 was never served: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v.Meta.Key != "gw-01" {
		t.Fatalf("Get = %+v", v.Meta)
	}
	if err := api.Pause(ctx, "ApiGateway", "gw-01", "look"); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if err := api.Resume(ctx, "ApiGateway", "gw-01"); err != nil {
		t.Fatalf("resume: %v", err)
	}
	h, err := api.History(ctx, "ApiGateway", "gw-01")
	if err != nil || len(h) == 0 {
		t.Fatalf("history: %d entries, %v", len(h), err)
	}
	for _, token := range []string{"", "wrong"} {
		other, _ := oncall.NewRemote(oncall.RemoteConfig{URL: url, Token: token})
		if err := other.Pause(ctx, "ApiGateway", "gw-01", ""); !errors.Is(err, oncall.ErrUnauthorized) {
			t.Errorf("pause with token %q: %v, want ErrUnauthorized", token, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
