package gcpfake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The fake's OAuth 2.0 side: a token endpoint for service account keys (the JWT-bearer grant,
// RFC 7523, that the Google auth library makes with a key's token_uri) and bearer-token checks
// on every API call once RequireAuth is on. So a test can drive the real credentials path: a key
// Secret, the operator's GOOGLE_APPLICATION_CREDENTIALS, a key that stops being valid.

const (
	tokenPath     = "/token"
	jwtBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	scopeCompute  = "https://www.googleapis.com/auth/compute"
	scopePlatform = "https://www.googleapis.com/auth/cloud-platform"
	// scopeDNS is what external-dns's Cloud DNS provider asks for (providers/dns/clouddnsfake
	// checks the tokens this endpoint issues).
	scopeDNS = "https://www.googleapis.com/auth/ndev.clouddns.readwrite"
)

type authState struct {
	required bool
	// accounts are the service accounts whose keys are valid, by email.
	accounts map[string]*rsa.PublicKey
	// tokens are the access tokens issued, to the email they were issued for.
	tokens map[string]string
}

// TokenURL is the token endpoint, the token_uri of the keys NewServiceAccountKey makes.
func (s *Server) TokenURL() string { return s.srv.URL + tokenPath }

// RequireAuth makes every API call need an access token the fake issued (401 otherwise).
func (s *Server) RequireAuth() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth.required = true
}

// NewServiceAccountKey makes a service account key for email, in the JSON of
// `gcloud iam service-accounts keys create`, whose token_uri is this fake, and registers it.
func (s *Server) NewServiceAccountKey(project, email string) ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.auth.accounts[email] = &key.PublicKey
	s.seq++
	id := strconv.FormatUint(s.seq, 10)
	s.mu.Unlock()
	return json.Marshal(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": "key-" + id,
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": id, "token_uri": s.TokenURL(),
	})
}

// VerifyToken tells whether tok is an access token this endpoint issued and that is still valid,
// and for which service account: for other fakes that take its tokens (Cloud DNS).
func (s *Server) VerifyToken(tok string) (email string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	email, ok = s.auth.tokens[tok]
	return email, ok
}

// Revoke makes email's key and every token issued to it invalid, as deleting the key would.
func (s *Server) Revoke(email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.auth.accounts, email)
	for tok, e := range s.auth.tokens {
		if e == email {
			delete(s.auth.tokens, tok)
		}
	}
}

// authorized serves the token endpoint and checks API calls' tokens; it reports whether the
// call goes on to the API.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == tokenPath {
		s.token(w, r)
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.auth.required {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if _, valid := s.auth.tokens[tok]; ok && valid {
		return true
	}
	s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Status: http.StatusUnauthorized})
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusUnauthorized)
	const msg = "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential."
	_, _ = fmt.Fprintf(w, `{"error":{"code":401,"message":%q,"status":"UNAUTHENTICATED","errors":[{"message":%q,"domain":"global","reason":"required","location":"Authorization","locationType":"header"}]}}`, msg, msg)
	return false
}

// token answers the JWT-bearer grant: the assertion must be signed (RS256) by a registered key
// of its issuer, be for this endpoint, unexpired, and ask for a compute scope.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	fail := func(code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != jwtBearer {
		fail("unsupported_grant_type", "only the JWT-bearer grant is served")
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		fail("invalid_grant", "malformed assertion")
		return
	}
	var claims struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
		Exp   int64  `json:"exp"`
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		fail("invalid_grant", "malformed claims")
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		fail("invalid_grant", "malformed signature")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pub, ok := s.auth.accounts[claims.Iss]
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch {
	case !ok:
		fail("invalid_grant", "Invalid JWT Signature.") // what Google says for a deleted key
	case rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil:
		fail("invalid_grant", "Invalid JWT Signature.")
	case claims.Aud != s.srv.URL+tokenPath:
		fail("invalid_grant", "Invalid JWT: audience is not this token endpoint")
	case claims.Exp < time.Now().Unix():
		fail("invalid_grant", "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe.")
	case !strings.Contains(claims.Scope, scopeCompute) && !strings.Contains(claims.Scope, scopePlatform) && !strings.Contains(claims.Scope, scopeDNS):
		fail("invalid_scope", "no compute, cloud-platform or Cloud DNS scope")
	default:
		s.seq++
		tok := "fake-token-" + strconv.FormatUint(s.seq, 10)
		s.auth.tokens[tok] = claims.Iss
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	}
}
