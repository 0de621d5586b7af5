package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// api is what the commands use to read and act: an oncall.Client on a
// store, or an oncall.Remote of a server (--server).
type api interface {
	Registrations(ctx context.Context) ([]registry.Entry, error)
	Served(ctx context.Context, kind string) (bool, error)
	Get(ctx context.Context, kind, key string) (oncall.View, error)
	List(ctx context.Context, kind string, opts store.ListOptions) ([]oncall.View, error)
	Select(ctx context.Context, sel oncall.Selection) ([]oncall.View, error)
	History(ctx context.Context, kind, key string) ([]history.Entry, error)
	Watch(ctx context.Context, sel oncall.Selection, each func(oncall.Event) error) error
	Wait(ctx context.Context, kind, key, id string) (history.Entry, error)
	Await(ctx context.Context, kind, key string, generation int64) (oncall.View, error)
	DiffMachine(ctx context.Context, kind string, next statemachine.Descriptor) (oncall.MachineDiff, error)
	Apply(ctx context.Context, kind, key string, a oncall.Action) (statemachine.Command, error)
	Pause(ctx context.Context, kind, key, reason string) error
	Resume(ctx context.Context, kind, key string) error
	Retry(ctx context.Context, kind, key string) (statemachine.Command, error)
	Skip(ctx context.Context, kind, key, step string) (statemachine.Command, error)
	Move(ctx context.Context, kind, key, phase string) (statemachine.Command, error)
	Request(ctx context.Context, kind, key, name string) (statemachine.Command, error)
	RemoveFinalizer(ctx context.Context, kind, key, finalizer string, force bool) error
	Bulk(ctx context.Context, b oncall.Bulk) (oncall.BulkResult, error)
}

var (
	_ api = (*oncall.Client)(nil)
	_ api = (*oncall.Remote)(nil)
)

// token returns the server's bearer token: the first line of --token-file,
// or TEND_TOKEN.
func (o *options) token() (string, error) {
	if o.tokenFile != "" {
		data, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		line, _, _ := strings.Cut(string(data), "\n")
		return strings.TrimSpace(line), nil
	}
	return os.Getenv("TEND_TOKEN"), nil
}

// connectServer connects to the on-call API a program serves at
// --server.
func (o *options) connectServer(ctx context.Context) (*conn, error) {
	if o.store != "" {
		return nil, usagef("--server and --store do not go together: the server reads its own store")
	}
	token, err := o.token()
	if err != nil {
		return nil, err
	}
	r, err := oncall.NewRemote(oncall.RemoteConfig{URL: o.server, Token: token, Actor: o.actorName()})
	if err != nil {
		return nil, usagef("--server: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	defer cancel()
	regs, err := r.Registrations(cctx)
	if err != nil {
		return nil, fmt.Errorf("reading the registered machines: %w", err)
	}
	c := &conn{client: r, regs: map[string]registry.Entry{}, shared: true, close: func() {}}
	for _, reg := range regs {
		c.regs[reg.Kind] = reg
		c.kinds = append(c.kinds, reg.Kind)
	}
	slices.Sort(c.kinds)
	return c, nil
}
