package aws

import "context"

// Call is one mutating AWS call the deployer makes or, in a plan, would make.
type Call struct {
	Operation string // the API operation, e.g. CreateRule
	Resource  string // the Stack resource, e.g. "listener/443 rule/ab12"
	Detail    string // what changes, e.g. "host-header=[a.example.com] → forward tg/x=1"
}

func (c Call) String() string {
	s := c.Operation + " " + c.Resource
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// Plan runs Deploy's diff against the live account and returns the calls Deploy would make,
// making no mutating call itself. Resources a plan would create have placeholder ARNs
// ("(new <id>)"), so calls after a create name them that way.
func (d *deployer) Plan(ctx context.Context, s *Stack) ([]Call, error) {
	x := &executor{dry: true}
	_, err := d.run(ctx, s, x)
	return x.calls, err
}
