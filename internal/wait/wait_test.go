package wait_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/internal/wait"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := wait.Sleep(t.Context(), time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Fatalf("Sleep = %v after %v, want nil after 1m", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := wait.Sleep(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute+time.Second {
			t.Fatalf("Sleep = %v, want the context's error once it ends", err)
		}
	})
}
