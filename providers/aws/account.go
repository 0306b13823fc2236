package aws

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Keys of a credentials Secret (AWSCredentials.SecretRef).
const (
	secretKeyAccessKeyID     = "access-key-id"
	secretKeySecretAccessKey = "secret-access-key"
	secretKeySessionToken    = "session-token"
)

// accountOptions configure how the provider reaches AWS accounts (the operator's flags).
type accountOptions struct {
	// Secrets reads a Secret's data (SecretRef credentials) on every clients call, so that a
	// rotation is seen at once: it should read from an informer cache. Nil refuses such credentials.
	Secrets func(ctx context.Context, namespace, name string) (map[string][]byte, error)
	// QPS and Burst size the token bucket shared by every call to one account and region.
	// Default 10 and 20.
	QPS   float64
	Burst int
	// MaxAttempts and MaxBackoff bound the SDK's retries of one call. Default 3 and 20s, the SDK's.
	MaxAttempts int
	MaxBackoff  time.Duration
	// DiscoveryTTL is how long discovered subnets are reused. Default 5 minutes.
	DiscoveryTTL time.Duration
	// Registerer gets the AWS API metrics; nil registers none.
	Registerer prometheus.Registerer
	// HTTPClient makes the SDK's HTTP requests (and then takes no $AWS_CA_BUNDLE); nil is the
	// SDK's own.
	HTTPClient awssdk.HTTPClient
	// IdleTTL is how long the clients of an account and region nobody asked for are kept (a class
	// deleted, a region no longer used). Default 1 hour.
	IdleTTL time.Duration
	// Now is the clock of the discovery cache and of IdleTTL; nil is time.Now.
	Now func() time.Time
	Log logr.Logger
}

// accounts keeps one set of clients per AWS account, region and endpoint, so that every gateway
// of that account shares its credentials cache, rate limiter and discovery cache.
type accounts struct {
	opts    accountOptions
	metrics *apiMetrics

	mu    sync.Mutex
	byKey map[string]*account
	// pruned is when idle accounts were last looked for.
	pruned time.Time
}

// account is the clients of one accountKey, made from credentials of version (a hash of the
// Secret's keys; "" for other sources), last asked for at used.
type account struct {
	version string
	clients *clients
	used    time.Time
}

// clients are the SDK clients of one account and region.
type clients struct {
	ELB *elasticloadbalancingv2.Client
	EC2 *ec2.Client
	ACM *acm.Client
	// Account is the accountKey, for messages: it names where credentials come from, never them.
	Account  string
	limiter  *rate.Limiter
	networks *networkCache
}

func newAccounts(o accountOptions) *accounts {
	if o.QPS <= 0 {
		o.QPS = 10
	}
	if o.Burst <= 0 {
		o.Burst = 20
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 20 * time.Second
	}
	if o.DiscoveryTTL <= 0 {
		o.DiscoveryTTL = 5 * time.Minute
	}
	if o.IdleTTL <= 0 {
		o.IdleTTL = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	metrics, err := newAPIMetrics(o.Registerer)
	if err != nil {
		// Only a foreign collector of the same name does this; the provider works without them.
		o.Log.Error(err, "AWS API metrics are not exported")
	}
	return &accounts{opts: o, metrics: metrics, byKey: map[string]*account{}}
}

// clients returns the clients of o's account (o defaulted by decodeOptions), made on first use
// and again when the credentials Secret changes.
func (a *accounts) clients(ctx context.Context, o v1alpha1.AWSOptions) (*clients, error) {
	key := accountKey(o)
	var static *awssdk.Credentials
	version := ""
	if c := o.Credentials; c != nil && c.SecretRef != nil {
		creds, err := a.readSecret(ctx, *c.SecretRef)
		if err != nil {
			// No call can be signed: the class's owner has to fix the Secret.
			return nil, &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Account: key,
				Operation: "reading Secret " + c.SecretRef.Namespace + "/" + c.SecretRef.Name, Message: err.Error(), Err: err}
		}
		static = &creds
		version = credentialsVersion(creds)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	a.prune(now)
	old := a.byKey[key]
	if old != nil && old.version == version {
		old.used = now
		return old.clients, nil
	}
	// Rotated keys are still the same account: keep its token bucket.
	lim := rate.NewLimiter(rate.Limit(a.opts.QPS), a.opts.Burst)
	if old != nil {
		lim = old.clients.limiter
	}
	c, err := a.newClients(ctx, o, key, static, lim)
	if err != nil {
		return nil, err
	}
	a.byKey[key] = &account{version: version, clients: c, used: now}
	return c, nil
}

// prune forgets the accounts not asked for within IdleTTL, looking at most every IdleTTL/8: their
// clients hold credential caches, connections and discovery caches. A returning account gets new
// clients (and a full token bucket). Called with a.mu held.
func (a *accounts) prune(now time.Time) {
	if now.Sub(a.pruned) < a.opts.IdleTTL/8 {
		return
	}
	a.pruned = now
	for key, acc := range a.byKey {
		if now.Sub(acc.used) > a.opts.IdleTTL {
			delete(a.byKey, key)
			a.opts.Log.V(1).Info("AWS account clients dropped after idling", "account", key, "idle", now.Sub(acc.used).Round(time.Second).String())
		}
	}
}

// current reports whether c are still the clients of their account: not pruned, not replaced by
// rotated credentials.
func (a *accounts) current(c *clients) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc, ok := a.byKey[c.Account]
	return ok && acc.clients == c
}

// accountKey names an account and region by where its credentials come from: the Secret's name
// (not its contents), the roles, the region and the endpoint.
func accountKey(o v1alpha1.AWSOptions) string {
	source := "default credentials"
	if c := o.Credentials; c != nil {
		switch {
		case c.SecretRef != nil:
			source = "Secret " + c.SecretRef.Namespace + "/" + c.SecretRef.Name
		case c.WebIdentity != nil:
			source = "web identity " + c.WebIdentity.RoleARN + " (" + c.WebIdentity.TokenFile + ")"
		}
		if r := c.AssumeRole; r != nil {
			source += " as " + r.RoleARN + " session " + r.SessionName
			if r.ExternalID != "" {
				source += " external ID " + shortHash(16, r.ExternalID)
			}
		}
	}
	key := source + " in " + o.Region
	if o.Endpoint != "" {
		key += " at " + o.Endpoint
	}
	return key
}

func (a *accounts) readSecret(ctx context.Context, ref v1alpha1.ObjectRef) (awssdk.Credentials, error) {
	if a.opts.Secrets == nil {
		return awssdk.Credentials{}, errors.New("this operator reads no Secrets")
	}
	data, err := a.opts.Secrets(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return awssdk.Credentials{}, err
	}
	creds := awssdk.Credentials{
		AccessKeyID:     string(data[secretKeyAccessKeyID]),
		SecretAccessKey: string(data[secretKeySecretAccessKey]),
		SessionToken:    string(data[secretKeySessionToken]),
		Source:          "fleetgate Secret " + ref.Namespace + "/" + ref.Name,
	}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return awssdk.Credentials{}, fmt.Errorf("the keys %s and %s are required", secretKeyAccessKeyID, secretKeySecretAccessKey)
	}
	return creds, nil
}

func credentialsVersion(c awssdk.Credentials) string {
	return shortHash(16, c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
}

// newClients makes the clients of one account: every service (STS too) at o.Endpoint when set,
// with the account's rate limiter, the metrics and the standard retryer.
func (a *accounts) newClients(ctx context.Context, o v1alpha1.AWSOptions, key string, static *awssdk.Credentials, lim *rate.Limiter) (*clients, error) {
	load := []func(*config.LoadOptions) error{
		config.WithRegion(o.Region),
		config.WithRetryer(newRetryer(a.opts.MaxAttempts, a.opts.MaxBackoff)),
		config.WithAPIOptions(a.metrics.apiOptions(lim)),
	}
	if o.Endpoint != "" {
		load = append(load, config.WithBaseEndpoint(o.Endpoint))
	}
	if static != nil {
		load = append(load, config.WithCredentialsProvider(credentials.StaticCredentialsProvider{Value: *static}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration of %s: %w", key, err)
	}
	if a.opts.HTTPClient != nil {
		// Set after loading: LoadDefaultConfig refuses a client it cannot give $AWS_CA_BUNDLE to.
		cfg.HTTPClient = a.opts.HTTPClient
	}
	cfg.Credentials = roleCredentials(cfg, o.Credentials)
	return &clients{
		ELB:      elasticloadbalancingv2.NewFromConfig(cfg),
		EC2:      ec2.NewFromConfig(cfg),
		ACM:      acm.NewFromConfig(cfg),
		Account:  key,
		limiter:  lim,
		networks: newNetworkCache(a.opts.DiscoveryTTL, a.opts.Now),
	}, nil
}

// roleCredentials are the credentials of c's roles on top of cfg's: a web identity's role, then
// the assumed role, each refreshed before it expires by a credentials cache.
func roleCredentials(cfg awssdk.Config, c *v1alpha1.AWSCredentials) awssdk.CredentialsProvider {
	creds := cfg.Credentials
	if c == nil {
		return creds
	}
	if w := c.WebIdentity; w != nil {
		// AssumeRoleWithWebIdentity is unsigned: the token is the credential.
		creds = awssdk.NewCredentialsCache(stscreds.NewWebIdentityRoleProvider(sts.NewFromConfig(cfg), w.RoleARN,
			stscreds.IdentityTokenFile(w.TokenFile), func(o *stscreds.WebIdentityRoleOptions) {
				o.RoleSessionName = defaultSessionName
			}))
	}
	if r := c.AssumeRole; r != nil {
		base := cfg.Copy()
		base.Credentials = creds
		creds = awssdk.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(base), r.RoleARN,
			func(o *stscreds.AssumeRoleOptions) {
				o.RoleSessionName = r.SessionName
				if r.ExternalID != "" {
					o.ExternalID = awssdk.String(r.ExternalID)
				}
			}))
	}
	return creds
}
