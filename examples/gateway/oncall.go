package main

import (
	"errors"
	"net/http"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

// withOncall returns next with the on-call API of st mounted under
// /oncall/ for the holders of token (tend --server), who may read and act;
// without a token, next alone.
func withOncall(st store.Backend, token string, next http.Handler) (http.Handler, error) {
	if token == "" {
		return next, nil
	}
	api, err := oncall.NewServer(oncall.ServerConfig{
		Store:  st,
		Prefix: "/oncall/",
		Token:  token,
		Authorize: func(_ *http.Request, a oncall.Access) error {
			if !a.Token {
				return errors.New("the demo's on-call API serves its token's holders only")
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/oncall/", api)
	if next != nil {
		mux.Handle("/", next)
	}
	return mux, nil
}
