package platform

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tendhq/tend/store"
)

// ErrInvalid is returned, wrapped with the reason, for a malformed request.
var ErrInvalid = errors.New("platform: invalid request")

// CreateGateway stores a new ApiGateway under id with the given intent. id is
// also the gateway's namespace: 1 to 40 lower-case letters, digits and '-',
// starting with a letter. The gateway's controller takes it from there.
func (p *Platform) CreateGateway(ctx context.Context, id string, spec GatewaySpec) (*Gateway, error) {
	if err := validateID(id); err != nil {
		return nil, err
	}
	if spec.State == "" {
		spec.State = Running
	}
	return p.docs.Gateways.Create(ctx, &Gateway{
		Meta: store.Meta{Kind: KindApiGateway, Key: id, Labels: map[string]string{LabelGateway: id}},
		Spec: spec,
	})
}

// SetGatewayState writes a new intent for the gateway, conditional on the
// phase it read: an intent the gateway refuses in its phase (Running while
// it is Deleting) is refused with an error that names the phase and the
// reason and matches statemachine.ErrIntentRefused. Each write of
// Restarting asks for one more restart (a new token in Spec.Restart), even
// when the gateway is Restarting already; the gateway then runs one
// stop-then-start cycle per token, or only starts if it was not running.
func (p *Platform) SetGatewayState(ctx context.Context, id string, state GatewayState) (*Gateway, error) {
	token := ""
	if state == Restarting {
		token = rand.Text()
	}
	return p.gateways.UpdateSpec(ctx, id, func(s *GatewaySpec) {
		s.State = state
		if token != "" {
			s.Restart = token
		}
	})
}

// AddCloudFunction stores a cloud function of the gateway.
func (p *Platform) AddCloudFunction(ctx context.Context, gw *Gateway, name string, spec CloudFunctionSpec) error {
	_, err := p.docs.CloudFunctions.Create(ctx, &store.Object[CloudFunctionSpec, Leaf]{
		Meta: ownedBy(KindCloudFunction, childKey(gw.Key, name), &gw.Meta, nil), Spec: spec})
	return err
}

// AddCronTrigger stores a cron trigger of the gateway.
func (p *Platform) AddCronTrigger(ctx context.Context, gw *Gateway, name string, spec CronTriggerSpec) error {
	_, err := p.docs.CronTriggers.Create(ctx, &store.Object[CronTriggerSpec, Leaf]{
		Meta: ownedBy(KindCronTrigger, childKey(gw.Key, name), &gw.Meta, nil), Spec: spec})
	return err
}

// AddClientApp stores a client app of the gateway's environment for stage.
// The environment exists once the gateway was created (phase Created or
// later); before that the error matches store.ErrNotFound.
func (p *Platform) AddClientApp(ctx context.Context, gw *Gateway, stage, name string, spec ClientAppSpec) error {
	env, err := p.docs.Environments.Get(ctx, childKey(gw.Key, stage))
	if err != nil {
		return err
	}
	_, err = p.docs.ClientApps.Create(ctx, &store.Object[ClientAppSpec, Leaf]{
		Meta: ownedBy(KindClientApp, childKey(env.Key, name), &gw.Meta, &env.Meta), Spec: spec})
	return err
}

func validateID(id string) error {
	ok := len(id) >= 1 && len(id) <= 40 && id[0] >= 'a' && id[0] <= 'z'
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w: gateway id %q: want 1 to 40 lower-case letters, digits and '-', starting with a letter", ErrInvalid, id)
	}
	return nil
}
