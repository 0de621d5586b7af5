package driver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"go.uber.org/zap"
)

// served logs, counts (tend_requests_total) and records in history the
// request tokens a stored write records served, read being the status
// before it and next the status it wrote: a token counts as served at the
// write that records it so (the completion of the operation that carried
// it), never at that operation's begin. The result is "served" for the
// tokens an operation carried, "refused" with the machine's reason, and
// "moot" for the others.
func (d *phaseDriver[Spec, Status, S, P]) served(ctx context.Context, log *zap.Logger, obj *store.Object[Spec, Status], read, next statemachine.Status[S, P], now time.Time) {
	for _, rq := range next.Requests {
		before := slices.IndexFunc(read.Requests, func(r statemachine.RequestState) bool { return r.Name == rq.Name })
		var tokens []string
		for _, tok := range rq.Served {
			if before < 0 || !slices.Contains(read.Requests[before].Served, tok) {
				tokens = append(tokens, tok)
			}
		}
		if len(tokens) == 0 {
			continue
		}
		e := history.Entry{Time: now, Type: history.Request, Name: rq.Name, Outcome: "served",
			Phase: fmt.Sprint(read.Phase), To: fmt.Sprint(next.Phase), Reason: strings.Join(tokens, ", ")}
		switch op := read.Operation; {
		case op != nil && op.Request == rq.Name && slices.Contains(op.Tokens, tokens[0]):
			e.Operation = op.ID
		case rq.Refused != "":
			e.Outcome, e.Reason = "refused", rq.Refused
		default:
			e.Outcome = "moot"
		}
		d.metrics.Request(rq.Name, e.Outcome)
		log.Info("request "+e.Outcome, zap.String("key", obj.Key), zap.String("request", rq.Name), zap.Strings("tokens", tokens))
		if d.history != nil {
			d.history.Record(ctx, &obj.Meta, d.scrubber(obj), e)
		}
	}
}
