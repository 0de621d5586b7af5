package managertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// journalEntry is one line of the replicas' journal: a reconcile starting
// or ending.
type journalEntry struct {
	Event   string `json:"event"` // "start" or "end"
	Key     string `json:"key"`
	Replica string `json:"replica"`
	Fence   int64  `json:"fence"`
	At      int64  `json:"at"` // wall clock, Unix nanoseconds
}

func readJournal(path string) ([]journalEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []journalEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e journalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// The killed replica may have died in the middle of a line.
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// checkExclusive checks that no two replicas' reconciles of one key
// overlapped in time. A reconcile of the killed replica that never ended
// lasts until the kill.
func checkExclusive(entries []journalEntry, victim string, killed time.Time) error {
	type span struct {
		replica    string
		start, end int64
	}
	spans := map[string][]span{} // by key
	open := map[[2]string]int64{}
	for _, e := range entries {
		k := [2]string{e.Key, e.Replica}
		switch e.Event {
		case "start":
			open[k] = e.At
		case "end":
			spans[e.Key] = append(spans[e.Key], span{e.Replica, open[k], e.At})
			delete(open, k)
		}
	}
	for k, at := range open {
		if k[1] != victim {
			return fmt.Errorf("replica %s never ended its reconcile of %q", k[1], k[0])
		}
		spans[k[0]] = append(spans[k[0]], span{k[1], at, killed.UnixNano()})
	}
	for key, ss := range spans {
		for i, a := range ss {
			for _, b := range ss[i+1:] {
				if a.replica != b.replica && a.start < b.end && b.start < a.end {
					return fmt.Errorf("%q was reconciled by %s and %s at once (%v overlap)",
						key, a.replica, b.replica, time.Duration(min(a.end, b.end)-max(a.start, b.start)))
				}
			}
		}
	}
	return nil
}
