package expectations

import (
	"errors"
	"testing"
	"time"
)

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		wantErr bool
		wantTTL time.Duration
	}{
		{name: "zero means default", ttl: 0, wantTTL: DefaultTTL},
		{name: "positive kept", ttl: time.Second, wantTTL: time.Second},
		{name: "negative rejected", ttl: -time.Second, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCounts[string](CountsConfig{TTL: tt.ttl})
			n, nerr := NewNames[string, string](NamesConfig{TTL: tt.ttl})
			for _, e := range []error{err, nerr} {
				if tt.wantErr != (e != nil) {
					t.Fatalf("err = %v, want error %v", e, tt.wantErr)
				}
				if e != nil && !errors.Is(e, ErrInvalidConfig) {
					t.Fatalf("err = %v, want ErrInvalidConfig", e)
				}
			}
			if tt.wantErr {
				if c != nil || n != nil {
					t.Fatal("constructor returned a value with an error")
				}
				return
			}
			if c.clock.ttl != tt.wantTTL || n.clock.ttl != tt.wantTTL {
				t.Fatalf("ttl = %v, %v, want %v", c.clock.ttl, n.clock.ttl, tt.wantTTL)
			}
			if c.clock.now == nil || n.clock.now == nil {
				t.Fatal("nil Now was not defaulted")
			}
		})
	}
}

func TestExpiryBoundary(t *testing.T) {
	c := ttlClock{ttl: time.Minute}
	set := time.Unix(1000, 0)
	tests := []struct {
		after time.Duration
		want  bool
	}{
		{0, false},
		{time.Minute - time.Nanosecond, false},
		{time.Minute, false},
		{time.Minute + time.Nanosecond, true},
	}
	for _, tt := range tests {
		if got := c.expired(set, set.Add(tt.after)); got != tt.want {
			t.Errorf("expired after %v = %v, want %v", tt.after, got, tt.want)
		}
	}
}
