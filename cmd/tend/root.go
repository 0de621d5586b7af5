package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// options are the flags every command shares.
type options struct {
	store string // --store, or TEND_STORE
	// server is --server, the URL of an on-call API, and tokenFile
	// --token-file, the file holding its bearer token.
	server, tokenFile string
	actor             string // --actor, or TEND_ACTOR, or the user's name
	yes               bool   // --yes
	// connectTimeout bounds connecting and reading the registrations.
	connectTimeout time.Duration
	in             io.Reader
	out            io.Writer
	errOut         io.Writer
	// interactive reports whether in is a terminal a person can answer on.
	interactive bool
	// now is the command's clock: ages, deadlines.
	now func() time.Time
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	o := &options{in: in, out: out, errOut: errOut, now: time.Now, interactive: isTerminal(in)}
	root := newRoot(o)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintln(errOut, "error:", ce.err)
		}
		return ce.code
	}
	// cobra's own errors: the command line is wrong.
	fmt.Fprintln(errOut, "error:", err)
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(errOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return exitUsage
}

// isTerminal reports whether r is a terminal (not /dev/null, which is a
// character device too).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newRoot(o *options) *cobra.Command {
	root := &cobra.Command{
		Use:   "tend",
		Short: "Inspect and act on the documents tend controllers drive",
		Long: `tend reads the documents of a tend store — their State, Phase, operation,
failure and history — and acts on them as an operator: pause, resume, retry,
skip a step, move out of Fault, serve a request, remove a finalizer.

It needs no Go code of the controllers: each running controller records its
machine in the store (kind TendMachine), and tend reads it from there.

Connect with --store or TEND_STORE:
  memory:PATH                             a snapshot file of the memory store
  postgres://USER@HOST/DB[?schema=S]      PostgreSQL (schema default: tend)
  etcd://HOST:PORT[,HOST:PORT][/PREFIX]   etcd (prefix default: /tend/)
  kube, kube:KUBECONFIG                   Kubernetes: the kubeconfig's context
                                          and namespace

Or connect with --server to the on-call API a running program serves (see
the oncall package's Server), for example --server http://127.0.0.1:8080/oncall/
for the gateway demo's -listen; the bearer token is read from TEND_TOKEN or
from the file --token-file names, and never printed.

Commands that change documents ask for confirmation on a terminal; elsewhere
they need --yes.

` + exitCodes,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Args rejects an unknown command as a usage error, and keeps
		// cobra from treating the root as a leaf.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := root.PersistentFlags()
	pf.StringVar(&o.store, "store", "", "the store to connect to (default $TEND_STORE)")
	pf.StringVar(&o.server, "server", "", "the on-call API a running program serves (https://HOST/oncall/), instead of a store; its token is read from $TEND_TOKEN or --token-file")
	pf.StringVar(&o.tokenFile, "token-file", "", "the file holding --server's bearer token (default $TEND_TOKEN)")
	pf.DurationVar(&o.connectTimeout, "connect-timeout", 30*time.Second, "how long to wait for the store to answer")
	pf.StringVar(&o.actor, "actor", "", "who acts, as recorded in status and history (default $TEND_ACTOR, or the user's name)")
	root.AddCommand(
		newGet(o), newDescribe(o), newStuck(o), newMachine(o), newWait(o),
		newPause(o), newResume(o), newRetry(o), newSkip(o), newMove(o), newRequest(o), newRemoveFinalizer(o),
	)
	// cobra's completion command, made runnable so that an unknown shell is
	// a usage error (cobra would show the help and succeed).
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	return root
}

// actorName is --actor, TEND_ACTOR, or the user's name.
func (o *options) actorName() string {
	if o.actor != "" {
		return o.actor
	}
	if a := os.Getenv("TEND_ACTOR"); a != "" {
		return a
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "tend"
}

// runE adapts a command's function to cobra: its error gets its exit code.
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := f(cmd, args); err != nil {
			return classify(err)
		}
		return nil
	}
}
