package controller

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryDelay returns the delay [RetryAfter] attached to err, the outermost
// one in its chain, and whether there is one.
func RetryDelay(err error) (time.Duration, bool) {
	var r *retryAfterError
	if !errors.As(err, &r) {
		return 0, false
	}
	return r.after, true
}

// RetryAfterHTTP marks err, the failure of a request that got resp, to be
// retried when the server said: for a 429 Too Many Requests or a 503
// Service Unavailable response with a Retry-After header (a number of
// seconds or an HTTP date), it returns [RetryAfter](err, that delay).
// Otherwise (no response, another status, no or a malformed header) it
// returns err unchanged.
func RetryAfterHTTP(err error, resp *http.Response) error {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return err
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return err
	}
	if s, perr := strconv.ParseInt(v, 10, 64); perr == nil {
		if s < 0 {
			return err
		}
		return RetryAfter(err, time.Duration(min(s, int64(1<<62)/int64(time.Second)))*time.Second)
	}
	at, perr := http.ParseTime(v)
	if perr != nil {
		return err
	}
	return RetryAfter(err, time.Until(at))
}
