package redact_test

import (
	"errors"
	"fmt"

	"github.com/tendhq/tend/redact"
)

type DatabaseSpec struct {
	Host     string `json:"host"`
	Password string `json:"password" tend:"sensitive"`
}

func Example() {
	spec := DatabaseSpec{Host: "db.internal", Password: "hunter2"}
	s := redact.New(spec)

	err := fmt.Errorf("connecting to %s: password %s refused", spec.Host, spec.Password)
	fmt.Println(s.Error(err))
	fmt.Println(s.String("log in with hunter2"))
	// Output:
	// connecting to db.internal: password [redacted] refused
	// log in with [redacted]
}

func ExampleScrubber_Error() {
	errRefused := errors.New("refused")
	s := redact.Of("hunter2")

	err := s.Error(fmt.Errorf("password hunter2: %w", errRefused))
	fmt.Println(err)
	fmt.Println(errors.Is(err, errRefused))
	// Output:
	// password [redacted]: refused
	// true
}

func ExampleSecrets() {
	type Credentials struct {
		User  string
		Token string
	}
	type Spec struct {
		Name  string
		Creds Credentials `tend:"sensitive"`
		PIN   int         `tend:"sensitive"`
	}
	fmt.Println(redact.Secrets(Spec{Name: "a", Creds: Credentials{User: "alice", Token: "t0k3n"}, PIN: 1234}))
	// Output:
	// [alice t0k3n 1234]
}
