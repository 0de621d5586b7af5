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

// Polls of a step that end alike collapse into one entry, and a full
// history gives up its routine entries first.
func Example_polls() {
	ctx := context.Background()
	b, _ := memory.New(memory.Config{Kinds: append([]string{"Gateway"}, history.Kinds("Gateway")...)})
	gw, _ := b.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "gw-1"}, Spec: []byte(`{}`)})

	rec, _ := history.NewRecorder(b, history.RecorderConfig{MaxEntries: 4})
	at := time.Now()
	rec.Record("Gateway", "gw-1", gw.Meta.UID, history.Entry{Time: at, Type: history.Transition, Phase: "Created", To: "Starting"})
	for i := range 40 { // a step that polls every 50 ms
		t := at.Add(time.Duration(i+1) * 50 * time.Millisecond)
		rec.Record("Gateway", "gw-1", gw.Meta.UID, history.Entry{Time: t, Type: history.StepStarted, Phase: "Starting", Step: "activate"})
		rec.Record("Gateway", "gw-1", gw.Meta.UID, history.Entry{Time: t.Add(time.Millisecond), Type: history.StepEnded,
			Phase: "Starting", Step: "activate", Outcome: "progressed"})
	}
	rec.Record("Gateway", "gw-1", gw.Meta.UID, history.Entry{Time: at.Add(3 * time.Second), Type: history.Transition, Phase: "Starting", To: "Started"})
	rec.Record("Gateway", "gw-1", gw.Meta.UID, history.Entry{Time: at.Add(4 * time.Second), Type: history.Operator, Name: "pause", Actor: "ann"})
	rec.Flush(ctx)

	entries, _ := history.NewReader(b).History(ctx, "Gateway", "gw-1")
	for _, e := range entries {
		switch e.Type {
		case history.StepEnded:
			fmt.Printf("step %s %s ×%d over %v\n", e.Step, e.Outcome, e.Times(), e.Time.Sub(e.First))
		case history.Transition:
			fmt.Printf("%s → %s\n", e.Phase, e.To)
		default:
			fmt.Println(e.Type, e.Name, "by", e.Actor)
		}
	}
	// Output:
	// Created → Starting
	// step activate progressed ×40 over 1.95s
	// Starting → Started
	// operator pause by ann
}
