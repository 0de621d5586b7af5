package history_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/store"
)

func Example() {
	ctx := context.Background()
	b, _ := memory.New(memory.Config{Kinds: append([]string{"Gateway"}, history.Kinds("Gateway")...)})
	gw, _ := b.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "gw-1"}, Spec: []byte(`{}`)})

	rec, _ := history.NewRecorder(b, history.RecorderConfig{})
	at := time.Now()
	rec.Record("Gateway", "gw-1", gw.Meta.UID, history.Entry{Time: at, Type: history.Transition, Phase: "Creating", To: "Created"})
	rec.Record("Gateway", "gw-1", gw.Meta.UID, history.Entry{Time: at.Add(time.Second), Type: history.StepEnded,
		Phase: "Created", Step: "deploy", Attempt: 1, Outcome: "failed", Error: "quota exceeded"})
	rec.Flush(ctx) // Run does this in the background

	entries, _ := history.NewReader(b).History(ctx, "Gateway", "gw-1")
	for _, e := range entries {
		switch e.Type {
		case history.Transition:
			fmt.Printf("%s → %s\n", e.Phase, e.To)
		case history.StepEnded:
			fmt.Printf("step %s in %s, attempt %d: %s (%s)\n", e.Step, e.Phase, e.Attempt, e.Outcome, e.Error)
		}
	}
	// Output:
	// Creating → Created
	// step deploy in Created, attempt 1: failed (quota exceeded)
}
