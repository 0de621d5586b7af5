package controller_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/controller"
)

func TestRetryAfterHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("slow down")
		resp := func(code int, retryAfter string) *http.Response {
			r := &http.Response{StatusCode: code, Header: http.Header{}}
			if retryAfter != "" {
				r.Header.Set("Retry-After", retryAfter)
			}
			return r
		}
		for _, tc := range []struct {
			name string
			resp *http.Response
			want time.Duration // 0: err returned unchanged
		}{
			{"429 with seconds", resp(http.StatusTooManyRequests, "120"), 2 * time.Minute},
			{"503 with seconds", resp(http.StatusServiceUnavailable, " 7 "), 7 * time.Second},
			{"503 with a date", resp(http.StatusServiceUnavailable, time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat)), 90 * time.Second},
			{"429 without the header", resp(http.StatusTooManyRequests, ""), 0},
			{"429 with a malformed header", resp(http.StatusTooManyRequests, "soon"), 0},
			{"429 with a negative delay", resp(http.StatusTooManyRequests, "-5"), 0},
			{"500 with the header", resp(http.StatusInternalServerError, "120"), 0},
			{"no response", nil, 0},
		} {
			err := controller.RetryAfterHTTP(cause, tc.resp)
			d, ok := controller.RetryDelay(err)
			switch {
			case !errors.Is(err, cause):
				t.Errorf("%s: %v does not match its cause", tc.name, err)
			case tc.want == 0 && (ok || err != cause):
				t.Errorf("%s: got %v with delay %v, want the error unchanged", tc.name, err, d)
			case tc.want != 0 && (!ok || d != tc.want):
				t.Errorf("%s: delay %v, %t; want %v", tc.name, d, ok, tc.want)
			}
		}
	})
}

// RetryDelay finds the outermost delay in an error's chain.
func TestRetryDelay(t *testing.T) {
	inner := controller.RetryAfter(errors.New("busy"), time.Second)
	outer := controller.RetryAfter(fmt.Errorf("step: %w", inner), time.Minute)
	if d, ok := controller.RetryDelay(fmt.Errorf("reconcile: %w", outer)); !ok || d != time.Minute {
		t.Errorf("RetryDelay = %v, %t; want 1m0s", d, ok)
	}
	if d, ok := controller.RetryDelay(fmt.Errorf("step: %w", inner)); !ok || d != time.Second {
		t.Errorf("RetryDelay = %v, %t; want 1s", d, ok)
	}
	if _, ok := controller.RetryDelay(errors.New("plain")); ok {
		t.Error("RetryDelay found a delay in a plain error")
	}
}
