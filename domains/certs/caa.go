package certs

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"

	"petstore/domains/dnscheck"
)

// acmeAuthority learns, for the CAA check, a CA's CAA identities and this
// service's account there.
type acmeAuthority struct {
	client  *http.Client
	storage certmagic.Storage
	issuer  *certmagic.ACMEIssuer
	email   string

	mu         sync.Mutex
	identities []string
	known      bool      // identities were read (possibly none)
	failedAt   time.Time // the last failed directory fetch
	accountURI string
}

// directoryRetry spaces directory fetches after a failure, so that a CA
// that is down does not add a timeout to every check.
const directoryRetry = time.Minute

// directoryTimeout bounds one directory fetch within a check.
const directoryTimeout = 5 * time.Second

// get says what is known now; what cannot be learnt is left empty and
// asked again later.
func (a *acmeAuthority) get(ctx context.Context) dnscheck.CertificateAuthority {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.known && time.Since(a.failedAt) >= directoryRetry {
		ids, err := a.fetchIdentities(ctx)
		if err != nil {
			// A caller that gave up is not the CA failing: ask at the next check.
			if ctx.Err() == nil {
				a.failedAt = time.Now()
			}
		} else {
			a.identities, a.known = ids, true
		}
	}
	if a.accountURI == "" {
		// Not found is normal before the first certificate registers it.
		a.accountURI, _ = a.readAccountURI(ctx)
	}
	return dnscheck.CertificateAuthority{Identities: a.identities, AccountURI: a.accountURI}
}

// fetchIdentities reads meta.caaIdentities from the ACME directory (RFC
// 8555 section 7.1.1).
func (a *acmeAuthority) fetchIdentities(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, directoryTimeout)
	defer cancel()
	// acmez shares what certmagic's own clients already read.
	client := acme.Client{Directory: a.issuer.CA, HTTPClient: a.client, UserAgent: "petstore"}
	dir, err := client.GetDirectory(ctx)
	if err != nil || dir.Meta == nil {
		return nil, err
	}
	return dir.Meta.CAAIdentities, nil
}

// readAccountURI finds the account URL certmagic saved. certmagic has no
// exported way to ask, so this reads its storage layout:
// acme/<issuer key>/users/<email or "default">/*.json, URL in "location".
func (a *acmeAuthority) readAccountURI(ctx context.Context) (string, error) {
	email := cmp.Or(strings.ToLower(a.email), "default")
	dir := path.Join("acme", certmagic.StorageKeys.Safe(a.issuer.IssuerKey()), "users", certmagic.StorageKeys.Safe(email))
	keys, err := a.storage.List(ctx, dir, false)
	if err != nil {
		return "", err
	}
	for _, key := range keys {
		if !strings.HasSuffix(key, ".json") {
			continue
		}
		b, err := a.storage.Load(ctx, key)
		if err != nil {
			continue
		}
		var acct acme.Account
		if json.Unmarshal(b, &acct) == nil && acct.Location != "" {
			return acct.Location, nil
		}
	}
	return "", fs.ErrNotExist
}

// Authorities tells the DNS checker which CAs certificates come from
// (--acme-ca, in order; any may issue): their identities and accounts.
func (c *Certs) Authorities() func(context.Context) []dnscheck.CertificateAuthority {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if c.cfg.ACME.TrustedRoots != nil {
		// As certmagic does for its own requests to the CA.
		t.TLSClientConfig = &tls.Config{RootCAs: c.cfg.ACME.TrustedRoots}
	}
	client := &http.Client{Transport: t, Timeout: directoryTimeout}
	var authorities []*acmeAuthority
	for _, iss := range c.issuers {
		authorities = append(authorities, &acmeAuthority{client: client, storage: c.storage, issuer: iss, email: c.cfg.ACME.Email})
	}
	return func(ctx context.Context) []dnscheck.CertificateAuthority {
		out := make([]dnscheck.CertificateAuthority, len(authorities))
		for i, au := range authorities {
			out[i] = au.get(ctx)
		}
		return out
	}
}

// ValidationMethods are the ACME challenge types this service answers,
// when not the checker's default.
func (c *Certs) ValidationMethods() []string {
	if c.cfg.ACME.DisableHTTPChallenge {
		return []string{"tls-alpn-01"}
	}
	return nil
}
