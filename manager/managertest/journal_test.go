package managertest

import (
	"testing"
	"time"
)

func TestCheckExclusive(t *testing.T) {
	killed := time.Unix(0, 100)
	start := func(key, replica string, at int64) journalEntry {
		return journalEntry{Event: "start", Key: key, Replica: replica, At: at}
	}
	end := func(key, replica string, at int64) journalEntry {
		return journalEntry{Event: "end", Key: key, Replica: replica, At: at}
	}
	for _, tc := range []struct {
		name    string
		entries []journalEntry
		ok      bool
	}{
		{"none", nil, true},
		{"one after the other", []journalEntry{start("k", "a", 1), end("k", "a", 2), start("k", "b", 3), end("k", "b", 4)}, true},
		{"touching", []journalEntry{start("k", "a", 1), end("k", "a", 2), start("k", "b", 2), end("k", "b", 4)}, true},
		{"same replica twice", []journalEntry{start("k", "a", 1), start("j", "a", 2), end("k", "a", 3), end("j", "a", 4)}, true},
		{"other keys at once", []journalEntry{start("k", "a", 1), start("j", "b", 2), end("k", "a", 3), end("j", "b", 4)}, true},
		{"overlap", []journalEntry{start("k", "a", 1), start("k", "b", 2), end("k", "a", 3), end("k", "b", 4)}, false},
		{"nested", []journalEntry{start("k", "a", 1), start("k", "b", 2), end("k", "b", 3), end("k", "a", 4)}, false},
		{"victim cut off before", []journalEntry{start("k", "victim", 1), start("k", "b", 100), end("k", "b", 101)}, true},
		{"victim cut off, overlapped", []journalEntry{start("k", "victim", 1), start("k", "b", 99), end("k", "b", 101)}, false},
		{"survivor never ended", []journalEntry{start("k", "a", 1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkExclusive(tc.entries, "victim", killed)
			if (err == nil) != tc.ok {
				t.Fatalf("checkExclusive: got %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  FailoverConfig
	}{
		{"no Open", FailoverConfig{}},
		{"negative lag", FailoverConfig{Open: openNothing, ExpiryLag: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.validate(); err == nil {
				t.Fatal("validate accepted the config")
			}
		})
	}
	if err := (&FailoverConfig{Open: openNothing}).validate(); err != nil {
		t.Fatalf("validate refused a valid config: %v", err)
	}
}
