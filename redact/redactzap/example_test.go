package redactzap_test

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tendhq/tend/redact"
	"github.com/tendhq/tend/redact/redactzap"
)

func Example() {
	core, logs := observer.New(zap.InfoLevel)
	log := redactzap.Logger(zap.New(core), redact.Of("hunter2"))

	log.Named("login-hunter2").Info("logging in with hunter2",
		zap.String("user-hunter2", "alice"), zap.Error(errors.New("password hunter2 refused")))

	e := logs.All()[0]
	fmt.Println(e.LoggerName)
	fmt.Println(e.Message)
	fmt.Println(e.ContextMap())
	// Output:
	// login-[redacted]
	// logging in with [redacted]
	// map[error:password [redacted] refused user-[redacted]:alice]
}
