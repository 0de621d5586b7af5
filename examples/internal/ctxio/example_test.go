package ctxio_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tendhq/tend/examples/internal/ctxio"
)

// A copy through Reader stops at the first read after its context ends.
func ExampleReader() {
	ctx, cancel := context.WithCancel(context.Background())
	r := ctxio.Reader(ctx, strings.NewReader("first part, second part"))
	buf := make([]byte, 12)
	n, _ := r.Read(buf)
	fmt.Printf("%q\n", buf[:n])
	cancel()
	_, err := io.Copy(io.Discard, r)
	fmt.Println(err)
	// Output:
	// "first part, "
	// context canceled
}
