package gcp

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/auth"
	compute "cloud.google.com/go/compute/apiv1"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/impersonate"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// secretKeyServiceAccount is the key of a credentials Secret (GCPCredentials.SecretRef) holding
// a service account key, as `gcloud iam service-accounts keys create` writes it.
const secretKeyServiceAccount = "key.json"

// computeScope is what the compute calls need.
const computeScope = "https://www.googleapis.com/auth/compute"

// Where workload identity federation and impersonation exchange tokens.
const (
	stsTokenURL       = "https://sts.googleapis.com/v1/token"
	impersonationURLf = "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/%s:generateAccessToken"
)

// accounts keeps one set of clients per project, endpoint and identity (with the version of a
// key Secret's content, so that a rotated key gets new clients).
type accounts struct {
	secrets func(ctx context.Context, namespace, name string) (map[string][]byte, error)
	extra   []option.ClientOption
	retries Retries
	metrics *apiMetrics

	// idleTTL is how long clients nobody asked for are kept (a class deleted, a project no longer
	// used); now is its clock.
	idleTTL time.Duration
	now     func() time.Time

	mu    sync.Mutex
	byKey map[string]*clients
	// used is when each key's clients were last asked for, pruned when idle accounts were last
	// looked for.
	used   map[string]time.Time
	pruned time.Time
}

// accountIdleTTL is how long unused clients are kept.
const accountIdleTTL = time.Hour

func newAccounts(secrets func(context.Context, string, string) (map[string][]byte, error), extra []option.ClientOption, retries Retries, reg prometheus.Registerer) *accounts {
	return &accounts{secrets: secrets, extra: extra, retries: retries, metrics: newAPIMetrics(reg),
		idleTTL: accountIdleTTL, now: time.Now, byKey: map[string]*clients{}, used: map[string]time.Time{}}
}

// accountKey names a class's project and identity for messages: never the credentials.
func accountKey(o v1alpha1.GCPOptions) string {
	who := "application default credentials"
	if c := o.Credentials; c != nil {
		switch {
		case c.SecretRef != nil:
			who = "key in Secret " + c.SecretRef.Namespace + "/" + c.SecretRef.Name
		case c.WorkloadIdentity != nil:
			who = "workload identity " + c.WorkloadIdentity.Audience
		}
		if c.Impersonate != "" {
			who += " as " + c.Impersonate
		}
	}
	key := "project " + o.Project + ", " + who
	if o.Endpoint != "" {
		key += ", endpoint " + o.Endpoint
	}
	return key
}

// clients returns the clients of o's project and identity, making them on first use.
func (a *accounts) clients(ctx context.Context, o v1alpha1.GCPOptions) (*clients, string, error) {
	account := accountKey(o)
	opts, version, err := a.credentials(ctx, o)
	if err != nil {
		return nil, account, err
	}
	key := account + "|" + version
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.prune(now)
	if c, ok := a.byKey[key]; ok {
		a.used[key] = now
		return c, account, nil
	}
	// The identity's auth on top of a transport that counts the calls: one HTTP client for every
	// REST client of the account.
	rt, err := htransport.NewTransport(ctx, &transport{next: http.DefaultTransport, m: a.metrics},
		slices.Concat(opts, []option.ClientOption{option.WithScopes(compute.DefaultAuthScopes()...)}, a.extra)...)
	if err != nil {
		return nil, account, fmt.Errorf("making the compute transport: %w", err)
	}
	opts = []option.ClientOption{option.WithHTTPClient(&http.Client{Transport: rt})}
	if o.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(o.Endpoint))
	}
	c, err := newClients(ctx, o.Project, a.retries, append(opts, a.extra...)...)
	if err != nil {
		return nil, account, err
	}
	// Clients of an older version of the same account (a rotated key) go.
	for k, old := range a.byKey {
		if strings.HasPrefix(k, account+"|") {
			old.Close()
			delete(a.byKey, k)
			delete(a.used, k)
		}
	}
	a.byKey[key] = c
	a.used[key] = now
	return c, account, nil
}

// prune closes and forgets the clients not asked for within idleTTL, looking at most every
// idleTTL/8: each holds an HTTP transport and its connections. No Ensure holds clients that long
// (operations are waited on for at most 5 minutes). Called with a.mu held.
func (a *accounts) prune(now time.Time) {
	if now.Sub(a.pruned) < a.idleTTL/8 {
		return
	}
	a.pruned = now
	for k, c := range a.byKey {
		if now.Sub(a.used[k]) > a.idleTTL {
			c.Close()
			delete(a.byKey, k)
			delete(a.used, k)
		}
	}
}

func (a *accounts) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, c := range a.byKey {
		c.Close()
		delete(a.byKey, k)
		delete(a.used, k)
	}
}

// credentials are the client options of o's identity and a version that changes when its key does.
func (a *accounts) credentials(ctx context.Context, o v1alpha1.GCPOptions) ([]option.ClientOption, string, error) {
	c := o.Credentials
	if c == nil {
		return nil, "", nil // application default credentials
	}
	var key []byte
	var version string
	if c.SecretRef != nil {
		var err error
		if key, err = a.serviceAccountKey(ctx, c.SecretRef); err != nil {
			return nil, "", err
		}
		sum := sha256.Sum256(key)
		version = hex.EncodeToString(sum[:8])
	}
	if c.SecretRef == nil && c.WorkloadIdentity == nil && c.Impersonate != "" {
		ts, err := impersonate.CredentialsTokenSource(ctx, impersonate.CredentialsConfig{
			TargetPrincipal: c.Impersonate, Scopes: []string{computeScope}})
		if err != nil {
			return nil, "", &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Account: accountKey(o),
				Operation: "impersonating " + c.Impersonate, Message: err.Error(), Err: err}
		}
		return []option.ClientOption{option.WithTokenSource(ts)}, "", nil
	}
	typ, cfg, err := credentialConfig(c, key)
	if err != nil {
		return nil, "", err
	}
	return []option.ClientOption{option.WithAuthCredentialsJSON(typ, cfg)}, version, nil
}

// credentialConfig is the credential configuration (as the auth library reads it) of a service
// account key (key, from SecretRef) or of workload identity federation, impersonating
// c.Impersonate on top when set.
func credentialConfig(c *v1alpha1.GCPCredentials, key []byte) (option.CredentialsType, []byte, error) {
	if c.WorkloadIdentity != nil {
		w := c.WorkloadIdentity
		cfg := map[string]any{
			"type":               "external_account",
			"audience":           w.Audience,
			"subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
			"token_url":          stsTokenURL,
			"credential_source":  map[string]string{"file": w.TokenFile},
		}
		if c.Impersonate != "" {
			cfg["service_account_impersonation_url"] = fmt.Sprintf(impersonationURLf, c.Impersonate)
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			return "", nil, fmt.Errorf("encoding the workload identity configuration: %w", err)
		}
		return option.ExternalAccount, b, nil
	}
	if c.Impersonate == "" {
		return option.ServiceAccount, key, nil
	}
	b, err := json.Marshal(map[string]any{
		"type":                              "impersonated_service_account",
		"service_account_impersonation_url": fmt.Sprintf(impersonationURLf, c.Impersonate),
		"source_credentials":                json.RawMessage(key),
	})
	if err != nil {
		return "", nil, fmt.Errorf("encoding the impersonation configuration: %w", err)
	}
	return option.ImpersonatedServiceAccount, b, nil
}

// serviceAccountKey reads and checks the key of a credentials Secret. Only a service account key
// is taken: a credentials file of another type could make the client read files or call URLs
// of the Secret author's choosing.
func (a *accounts) serviceAccountKey(ctx context.Context, ref *v1alpha1.ObjectRef) ([]byte, error) {
	unavailable := func(msg string, err error) error {
		return &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Account: "Secret " + ref.Namespace + "/" + ref.Name,
			Operation: "reading Secret " + ref.Namespace + "/" + ref.Name, Message: msg, Err: err}
	}
	if a.secrets == nil {
		return nil, unavailable("this operator reads no credentials Secrets", nil)
	}
	data, err := a.secrets(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, unavailable(err.Error(), err)
	}
	key := data[secretKeyServiceAccount]
	var f struct {
		Type string `json:"type"`
	}
	if len(key) == 0 {
		return nil, unavailable("no "+secretKeyServiceAccount+" in the Secret", nil)
	}
	if err := json.Unmarshal(key, &f); err != nil || f.Type != "service_account" {
		return nil, unavailable(secretKeyServiceAccount+" is not a service account key", err)
	}
	return key, nil
}

// credentialsError turns a failure that is about who made a call into a
// *providers.CredentialsError: the API refusing the credentials (401) or a permission (403
// without a quota reason), or the token exchange failing.
func credentialsError(err error, account string) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*providers.CredentialsError](err); ok {
		return err
	}
	if ge, ok := errors.AsType[*googleapi.Error](err); ok {
		reason := ""
		if len(ge.Errors) > 0 {
			reason = ge.Errors[0].Reason
		}
		switch {
		case ge.Code == http.StatusUnauthorized:
			return &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Account: account,
				Operation: "Compute Engine API", Code: cmp.Or(reason, "unauthorized"), Message: ge.Message, Err: err}
		case ge.Code == http.StatusForbidden && !strings.Contains(reason, "rateLimit") && !strings.Contains(reason, "quota"):
			return &providers.CredentialsError{Reason: providers.ReasonPermissionDenied, Account: account,
				Operation: "Compute Engine API", Code: cmp.Or(reason, "forbidden"), Message: ge.Message, Err: err}
		}
		return err
	}
	if ae, ok := errors.AsType[*auth.Error](err); ok {
		return &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Account: account,
			Operation: "fetching an access token", Message: ae.Error(), Err: err}
	}
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
		return &providers.CredentialsError{Reason: providers.ReasonCredentialsRejected, Account: account,
			Operation: "fetching an access token", Code: re.ErrorCode, Message: re.Error(), Err: err}
	}
	if strings.Contains(err.Error(), "could not find default credentials") {
		return &providers.CredentialsError{Reason: providers.ReasonCredentialsUnavailable, Account: account,
			Operation: "finding application default credentials", Message: err.Error(), Err: err}
	}
	return err
}
