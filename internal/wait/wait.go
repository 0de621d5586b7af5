// Package wait holds the one way tend's packages pause: a timer that a
// context can cut short, and that a testing/synctest bubble runs on its fake
// clock.
package wait

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx is done, when it returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
