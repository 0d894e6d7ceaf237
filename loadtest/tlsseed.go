// The TLS rows' data file: a test CA, verified domains and their
// certificates in certmagic's storage as the service leaves them, and a
// check that the server left them as they were.

package main

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
	"golang.org/x/sync/errgroup"

	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/store"
	"petstore/store/boltstore"
)

// testCA signs every certificate of the TLS servers; the client trusts it
// alone.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(now time.Time) (*testCA, error) {
	cert, key, err := newCert(&x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Petstore loadtest CA", Organization: []string{"Petstore loadtest"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}, nil)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}, nil
}

// newCert makes an ECDSA P-256 key and tmpl's certificate for it, signed
// by ca, or by the key itself when ca is nil.
func newCert(tmpl *x509.Certificate, ca *testCA) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// issue makes what an ACME CA hands certmagic for name: an ECDSA P-256
// certificate (certmagic's default) valid 90 days from an hour ago, name
// its only SAN; the chain PEM is leaf then CA, the key PEM certmagic's
// encoding.
func (ca *testCA) issue(name string, now time.Time) (chainPEM, keyPEM []byte, leaf *x509.Certificate, err error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, nil, err
	}
	notBefore := now.Add(-time.Hour).Truncate(time.Second)
	leaf, key, err := newCert(&x509.Certificate{
		SerialNumber:          serial,
		DNSNames:              []string{name},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(tlsCertLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}, ca)
	if err != nil {
		return nil, nil, nil, err
	}
	chainPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})
	chainPEM = append(chainPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})...)
	if keyPEM, err = certmagic.PEMEncodePrivateKey(key); err != nil {
		return nil, nil, nil, err
	}
	return chainPEM, keyPEM, leaf, nil
}

// acmeIssuerKey is where certmagic's ACME issuer for caURL stores
// certificates, asked of a throwaway issuer so that it follows certmagic.
func acmeIssuerKey(caURL string) string {
	return certmagic.NewACMEIssuer(&certmagic.Config{}, certmagic.ACMEIssuer{CA: caURL, TestCA: caURL}).IssuerKey()
}

// certMetadata is the metadata certmagic writes beside an obtained
// certificate (saveCertResource): the CertificateResource as indented JSON,
// with the ARI renewal information a CA supporting it attaches.
func certMetadata(name string, leaf *x509.Certificate, caURL string, now time.Time) ([]byte, error) {
	ariID, err := acme.ARIUniqueIdentifier(leaf)
	if err != nil {
		return nil, err
	}
	ari := &acme.RenewalInfo{UniqueIdentifier: ariID}
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	ari.SuggestedWindow.Start = leaf.NotBefore.Add(lifetime * 2 / 3).UTC().Truncate(time.Second)
	ari.SuggestedWindow.End = ari.SuggestedWindow.Start.Add(48 * time.Hour)
	ari.SelectedTime = ari.SuggestedWindow.Start.Add(24 * time.Hour)
	retry := now.Add(6 * time.Hour).UTC().Truncate(time.Second)
	ari.RetryAfter = &retry
	base := strings.TrimSuffix(caURL, "/directory")
	issuerData, err := json.Marshal(acme.Certificate{
		URL:         base + "/acme/cert/" + leaf.SerialNumber.Text(16),
		CA:          caURL,
		Account:     base + "/acme/acct/1",
		RenewalInfo: ari,
	})
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(certmagic.CertificateResource{SANs: []string{name}, IssuerData: issuerData}, "", "\t")
}

// seedTLSStore writes a TLS server's data file as the service leaves it:
// plan pro, the admin token, each name verified (no DNS check due in the
// run) with its certificate, key and metadata where certmagic's issuer
// for caURL looks.
func seedTLSStore(ctx context.Context, file, adminToken string, ca *testCA, caURL string, names []string) (err error) {
	db, err := boltstore.Open(file, store.Options{})
	if err != nil {
		return err
	}
	defer func() { err = cmp.Or(err, db.Close()) }()
	if _, err := db.UpdateProject(ctx, func(p *store.Project) error {
		p.Plan = store.PlanPro
		return nil
	}); err != nil {
		return err
	}
	if adminToken != "" {
		if _, err := db.EnsureAdminToken(ctx, adminToken); err != nil {
			return err
		}
	}
	issuerKey := acmeIssuerKey(caURL)
	storage := certs.Storage(db)
	now := time.Now()

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(tlsSeedWorkers)
	for _, name := range names {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := seedTLSDomain(gctx, db, storage, issuerKey, ca, caURL, name, now); err != nil {
				return fmt.Errorf("seeding %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

func seedTLSDomain(ctx context.Context, db *boltstore.DB, storage certmagic.Storage, issuerKey string, ca *testCA, caURL, name string, now time.Time) error {
	chainPEM, keyPEM, leaf, err := ca.issue(name, now)
	if err != nil {
		return err
	}
	meta, err := certMetadata(name, leaf, caURL, now)
	if err != nil {
		return err
	}
	// What certmagic's saveCertResource writes, at the same keys.
	for key, value := range map[string][]byte{
		certmagic.StorageKeys.SitePrivateKey(issuerKey, name): keyPEM,
		certmagic.StorageKeys.SiteCert(issuerKey, name):       chainPEM,
		certmagic.StorageKeys.SiteMeta(issuerKey, name):       meta,
	} {
		if err := storage.Store(ctx, key, value); err != nil {
			return err
		}
	}
	added := now.Add(-2 * time.Hour).UTC()
	verified := added.Add(time.Minute)
	issued := verified.Add(30 * time.Second)
	nextCheck := verified.Add(6 * time.Hour)
	nb, na := leaf.NotBefore.UTC(), leaf.NotAfter.UTC()
	d := store.Domain{
		Name:        name,
		Apex:        dnscheck.IsApex(name),
		State:       store.DomainVerified,
		AddedAt:     added,
		VerifiedAt:  &verified,
		NextCheckAt: &nextCheck,
		Records:     dnscheck.RequiredRecords(name, "cname."+tlsPlatformDomain, nil),
		Check:       &store.DomainCheck{Verified: true, CheckedAt: verified, Findings: []store.Finding{}},
		Certificate: store.Certificate{
			State: store.CertIssued, Issuer: leaf.Issuer.CommonName,
			NotBefore: &nb, NotAfter: &na, UpdatedAt: &issued,
		},
	}
	return db.AddDomain(ctx, &d, nil)
}

// checkTLSStore reports what shows a TLS server went to its CA: a domain
// no longer issued (an attempt records pending or failed at once), ACME
// account data, or certificate files not seeded.
func checkTLSStore(ctx context.Context, file, caURL string, names []string) error {
	db, err := boltstore.Open(file, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	ds, err := db.Domains(ctx)
	if err != nil {
		return err
	}
	var problems []string
	if len(ds) != len(names) {
		problems = append(problems, fmt.Sprintf("%d domains, want %d", len(ds), len(names)))
	}
	for _, d := range ds {
		if d.State != store.DomainVerified || d.Certificate.State != store.CertIssued {
			problems = append(problems, fmt.Sprintf("domain %s: state %s, certificate %s %s", d.Name, d.State, d.Certificate.State, d.Certificate.Error))
		}
	}
	storage := certs.Storage(db)
	if keys, err := storage.List(ctx, "acme", true); err == nil {
		problems = append(problems, fmt.Sprintf("ACME account data in storage: %s", strings.Join(keys, ", ")))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	certsPrefix := certmagic.StorageKeys.CertsPrefix(acmeIssuerKey(caURL))
	all, err := storage.List(ctx, "", true)
	if err != nil {
		return err
	}
	stray := slices.DeleteFunc(all, func(k string) bool {
		return k == path.Dir(certsPrefix) || k == certsPrefix || strings.HasPrefix(k, certsPrefix+"/")
	})
	if files, err := storage.List(ctx, certsPrefix, true); err != nil {
		return err
	} else if want := 4 * len(names); len(files) != want { // a directory and 3 files per name
		problems = append(problems, fmt.Sprintf("%d keys under %s, want %d", len(files), certsPrefix, want))
	}
	if len(stray) > 0 {
		problems = append(problems, fmt.Sprintf("storage keys the seeding did not write: %s", strings.Join(stray, ", ")))
	}
	if len(problems) > 0 {
		if len(problems) > maxErrSamples {
			problems = append(problems[:maxErrSamples], fmt.Sprintf("(%d more)", len(problems)-maxErrSamples))
		}
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
