package dnscheck_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
)

// caaServer is a real DNS server playing a resolver that does not chase
// CNAMEs (as an authoritative server does for a target outside its zone),
// so the checker must follow them itself. Records can change while it runs,
// and a name/type can be made to answer SERVFAIL.
type caaServer struct {
	mu       sync.Mutex
	records  map[string][]dns.RR // by lower-case FQDN
	servfail map[string]bool     // "name. TYPE"
}

func startCAAServer(t *testing.T) (*caaServer, string) {
	t.Helper()
	s := &caaServer{records: map[string][]dns.RR{}, servfail: map[string]bool{}}
	return s, domaintest.ServeDNS(t, s, false)
}

func (s *caaServer) add(t *testing.T, records ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range records {
		rr, err := dns.NewRR(r)
		if err != nil {
			t.Fatalf("record %q: %v", r, err)
		}
		name := strings.ToLower(rr.Header().Name)
		s.records[name] = append(s.records[name], rr)
	}
}

// replaceCAA removes the CAA records at owner that the record rr mends
// (same tag, and the same issuer when it is an issue record), then adds rr.
func (s *caaServer) replaceCAA(t *testing.T, record string) {
	t.Helper()
	rr, err := dns.NewRR(record)
	if err != nil {
		t.Fatalf("record %q: %v", record, err)
	}
	want := rr.(*dns.CAA)
	issuer := func(v string) string {
		d, _, _ := strings.Cut(v, ";")
		return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
	}
	s.mu.Lock()
	name := strings.ToLower(want.Hdr.Name)
	var kept []dns.RR
	for _, old := range s.records[name] {
		c, ok := old.(*dns.CAA)
		if ok && strings.EqualFold(c.Tag, want.Tag) && (c.Value == want.Value || strings.EqualFold(want.Tag, "issue") && issuer(c.Value) == issuer(want.Value)) {
			continue
		}
		kept = append(kept, old)
	}
	s.records[name] = kept
	s.mu.Unlock()
	s.add(t, record)
}

func (s *caaServer) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servfail[name+" "+dns.TypeToString[q.Qtype]] {
		m.Rcode = dns.RcodeServerFailure
		_ = w.WriteMsg(m)
		return
	}
	rrs, exists := s.records[name]
	if _, parent, ok := strings.Cut(name, "."); ok && !exists {
		// RFC 4592: a wildcard answers for a name that has no records,
		// under the name asked.
		for _, rr := range s.records["*."+parent] {
			rr = dns.Copy(rr)
			rr.Header().Name = q.Name
			rrs, exists = append(rrs, rr), true
		}
	}
	for _, rr := range rrs {
		if rr.Header().Rrtype == q.Qtype || rr.Header().Rrtype == dns.TypeCNAME {
			m.Answer = append(m.Answer, rr)
		}
	}
	if !exists {
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

const (
	letsEncrypt  = "letsencrypt.org"
	ourAccount   = "https://acme-v02.api.letsencrypt.org/acme/acct/1234"
	otherAccount = "https://acme-v02.api.letsencrypt.org/acme/acct/999"
)

// TestCAATable runs the checker against a real DNS server for each case and
// compares its decision with what the CA decides, for the reason beside it.
// For each blocking case, the record the finding says would allow is put in
// place and the check must then pass: the finding's advice is tested too.
func TestCAATable(t *testing.T) {
	srv, addr := startCAAServer(t)
	letsEncryptCA := dnscheck.CertificateAuthority{Identities: []string{letsEncrypt}, AccountURI: ourAccount}

	type caaCase struct {
		name     string   // the case, and the label its records live under
		host     string   // the name checked; default www.<name>.test
		records  []string // relative to nothing: full names
		servfail []string // "name. TYPE" answering SERVFAIL
		cas      []dnscheck.CertificateAuthority
		flagIDs  []string // --acme-caa-identity
		want     string   // "" = verified, else the finding's code
		mention  []string // the message must name these
		reason   string   // why the CA decides so
	}
	cases := []caaCase{
		{name: "none", want: "",
			reason: `Boulder validateCAA: "No CAA records found, can issue".`},
		{name: "exact", records: []string{`exact.test. CAA 0 issue "letsencrypt.org"`}, want: "",
			reason: `Boulder: caaDomainMatches is caaDomain == issuerDomain.`},
		{name: "otherca", records: []string{`otherca.test. CAA 0 issue "other-ca.example"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{`otherca.test CAA 0 issue "other-ca.example"`, "letsencrypt.org"},
			reason: `Boulder: "The list of authorized issuers is non-empty, but we are not in it. Fail."`},
		{name: "upper", records: []string{`upper.test. CAA 0 issue "LetsEncrypt.org"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{`"LetsEncrypt.org"`, "exact spelling"},
			reason: `Boulder compares the issuer domain byte for byte (caaDomain == issuerDomain): no case folding.`},
		{name: "dot", records: []string{`dot.test. CAA 0 issue "letsencrypt.org."`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{`"letsencrypt.org."`, "exact spelling"},
			reason: `Boulder compares the issuer domain byte for byte: a trailing dot is a different name.`},
		{name: "spaces", records: []string{`spaces.test. CAA 0 issue " letsencrypt.org	; "`}, want: "",
			reason: `Boulder parseCAARecord trims spaces and tabs around the domain (isWSP), and "a semi-colon ... but no parameters" is fine.`},
		{name: "semicolon", records: []string{`semicolon.test. CAA 0 issue ";"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"forbid every certificate authority"},
			reason: `Boulder: "the unsatisfiable CAA record value \";\", used to prevent issuance by any CA under any circumstance".`},
		{name: "semicolonplus", records: []string{`semicolonplus.test. CAA 0 issue ";"`, `semicolonplus.test. CAA 0 issue "letsencrypt.org"`}, want: "",
			reason: `Boulder loops over every issue record and allows on the first that matches; ";" only authorises nobody.`},
		{name: "dns01", records: []string{`dns01.test. CAA 0 issue "letsencrypt.org; validationmethods=dns-01"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"validation methods dns-01", "http-01"},
			reason: `RFC 8657 section 4 / Boulder caaValidationMethodMatches: the record must list "the exact name of the ACME validation method used".`},
		{name: "http01", records: []string{`http01.test. CAA 0 issue "letsencrypt.org; validationmethods=http-01"`}, want: "",
			reason: `Boulder caaValidationMethodMatches: http-01 is listed; acmez retries a failed authorization with the next challenge type, so one allowed method is enough.`},
		{name: "alpn", records: []string{`alpn.test. CAA 0 issue "letsencrypt.org; validationmethods=tls-alpn-01,dns-01"`}, want: "",
			reason: `Boulder caaValidationMethodMatches: tls-alpn-01 is in the comma-separated list.`},
		{name: "methodspace", records: []string{`methodspace.test. CAA 0 issue "letsencrypt.org; validationmethods=http-01, tls-alpn-01"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"malformed parameter"},
			reason: `Boulder parseCAARecord: a value "contains disallowed character" (the space), so the record is skipped.`},
		{name: "methodbad", records: []string{`methodbad.test. CAA 0 issue "letsencrypt.org; validationmethods=http_01,http-01"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{`malformed validation method "http_01"`},
			reason: `Boulder: "If any listed method does not match the ABNF 1*(ALPHA / DIGIT / \"-\"), immediately reject the whole record."`},
		{name: "account", records: []string{`account.test. CAA 0 issue "letsencrypt.org; accounturi=` + ourAccount + `"`}, want: "",
			reason: `RFC 8657 section 3 / Boulder caaAccountURIMatches: the accounturi is this service's account.`},
		{name: "otheraccount", records: []string{`otheraccount.test. CAA 0 issue "letsencrypt.org; accounturi=` + otherAccount + `"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{otherAccount, ourAccount},
			reason: `Boulder caaAccountURIMatches: accountURI must equal prefix+accountID, else the record does not authorise.`},
		{name: "noaccount", records: []string{`noaccount.test. CAA 0 issue "letsencrypt.org; accounturi=` + ourAccount + `"`},
			cas: []dnscheck.CertificateAuthority{{Identities: []string{letsEncrypt}}}, want: dnscheck.CodeCAABlocksCA, mention: []string{"no account"},
			reason: `Boulder asked without an account ID skips records with accounturi ("if params.accountURIID == 0 { continue }"); a new account gets a new URI.`},
		{name: "accountcase", records: []string{`accountcase.test. CAA 0 issue "letsencrypt.org; AccountURI=` + otherAccount + `"`}, want: "",
			reason: `Boulder looks the parameter up as caaParams["accounturi"]: "AccountURI" is another, unknown parameter, which is ignored.`},
		{name: "malformed", records: []string{`malformed.test. CAA 0 issue "letsencrypt.org; foo"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"malformed parameter"},
			reason: `Boulder parseCAARecord: "parameter not formatted as tag=value", and a record that does not parse is skipped.`},
		{name: "wildonly", records: []string{`wildonly.test. CAA 0 issuewild ";"`}, want: "",
			reason: `RFC 8659 section 4.3 as Boulder quotes it: "Each issuewild Property MUST be ignored when processing a request for an FQDN that is not a Wildcard Domain Name."`},
		{name: "wildours", records: []string{`wildours.test. CAA 0 issuewild "letsencrypt.org"`, `wildours.test. CAA 0 issue "other-ca.example"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"other-ca.example"},
			reason: `RFC 8659 section 4.3: issuewild is ignored for a non-wildcard name, so only the issue record counts, and it names another CA.`},
		{name: "wildissue", host: "*.wildissue.test", records: []string{`wildissue.test. CAA 0 issue "letsencrypt.org"`}, want: "",
			reason: `RFC 8659 section 4.3: issuewild "takes precedence over each issue Property when specified"; none is, so issue counts (Boulder checkCAARecords: records := caaSet.issue; if wildcard && len(caaSet.issuewild) > 0 { records = caaSet.issuewild }).`},
		{name: "wildissuewild", host: "*.wildours2.test", records: []string{`wildours2.test. CAA 0 issuewild "letsencrypt.org"`, `wildours2.test. CAA 0 issue "other-ca.example"`}, want: "",
			reason: `RFC 8659 section 4.3: "If at least one issuewild Property is specified in the Relevant RRset for a Wildcard Domain Name, each issue Property MUST be ignored when processing a request for that Wildcard Domain Name."`},
		{name: "wildforbid", host: "*.wildforbid.test", records: []string{`wildforbid.test. CAA 0 issuewild ";"`, `wildforbid.test. CAA 0 issue "letsencrypt.org"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"forbid every", `issuewild ";"`},
			reason: `RFC 8659 section 4.3 takes issuewild over issue for a wildcard, and section 4.2: an empty issuer domain name authorises no CA (Boulder: ";" prevents issuance "by any CA under any circumstance").`},
		{name: "wildother", host: "*.wildother.test", records: []string{`wildother.test. CAA 0 issuewild "other-ca.example"`, `wildother.test. CAA 0 issue "letsencrypt.org"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"other-ca.example", `wildother.test CAA 0 issuewild "letsencrypt.org"`},
			reason: `RFC 8659 section 4.3: the issue record naming the CA is ignored for the wildcard, and the issuewild one names another CA (Boulder: "The list of authorized issuers is non-empty, but we are not in it. Fail.").`},
		{name: "wildissueother", host: "*.wildissueother.test", records: []string{`wildissueother.test. CAA 0 issue "other-ca.example"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"other-ca.example", `wildissueother.test CAA 0 issuewild "letsencrypt.org"`},
			reason: `RFC 8659 section 4.3: with no issuewild the issue record governs the wildcard, and it names another CA; an issuewild record naming the CA would take precedence for the wildcard alone.`},
		{name: "wildhttp01", host: "*.wildhttp01.test", records: []string{`wildhttp01.test. CAA 0 issuewild "letsencrypt.org; validationmethods=http-01"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"validation methods http-01", "dns-01"},
			reason: `RFC 8657 section 4 limits the record to http-01, and Boulder's policy offers a wildcard only dns-01 ("If the identifier is for a DNS wildcard name we only provide a DNS-01 challenge").`},
		{name: "wilddns01", host: "*.wilddns01.test", records: []string{`wilddns01.test. CAA 0 issuewild "letsencrypt.org; validationmethods=dns-01"`}, want: "",
			reason: `RFC 8657 section 4 / Boulder caaValidationMethodMatches: dns-01, the method of a wildcard, is listed.`},
		{name: "wildbase", host: "*.wildbase.test", records: []string{`wildbase.test. CAA 0 issuewild ";"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"wildbase.test"},
			reason: `RFC 8659 section 3: "Given a request for a specific Fully Qualified Domain Name X, or a request for a Wildcard Domain Name *.X, the Relevant RRset RelevantCAASet(X)" is looked up, so the climb starts at the base.`},
		{name: "wildclosest", host: "*.sub.wildclosest.test", records: []string{`sub.wildclosest.test. CAA 0 issue "letsencrypt.org"`, `wildclosest.test. CAA 0 issuewild ";"`}, want: "",
			reason: `RFC 8659 section 3: the closest non-empty set is the Relevant RRset, and it has no issuewild; the parent's issuewild is not looked at (Boulder selectCAA takes the first non-empty set).`},
		{name: "wildcase", host: "*.wildcase.test", records: []string{`wildcase.test. CAA 0 ISSUEWILD "other-ca.example"`, `wildcase.test. CAA 0 issue "letsencrypt.org"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"other-ca.example"},
			reason: `RFC 8659 section 4.1: "Matching of tags is case insensitive", so ISSUEWILD is issuewild and takes precedence over issue for the wildcard.`},
		{name: "iodefcrit", records: []string{`iodefcrit.test. CAA 128 iodef "mailto:security@iodefcrit.test"`}, want: "",
			reason: `Boulder filterCAA: iodef is recognised ("avoid setting the criticalUnknown bit if there are critical iodef tags"), and with no issue record "none of them pertain to issuance".`},
		{name: "critical", records: []string{`critical.test. CAA 128 tbs "unknown"`, `critical.test. CAA 0 issue "letsencrypt.org"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"critical", "tbs", `critical.test CAA 0 tbs "unknown"`},
			reason: `RFC 8659 section 4.1: a CA "MUST NOT issue" when the Relevant RRset has a critical property with an unknown tag; Boulder: "record with unknown critical directive".`},
		{name: "criticalone", records: []string{`criticalone.test. CAA 1 tbs "unknown"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"critical", "flag 1"},
			reason: `Boulder filterCAA: "the bit with significance 1 ... must reasonably be considered an alias for the critical bit".`},
		{name: "unknownplain", records: []string{`unknownplain.test. CAA 0 tbs "unknown"`}, want: "",
			reason: `Boulder: "there is only an iodef or non-critical unknown directive", so no record pertains to issuance.`},
		{name: "parent", host: "www.sub.parent.test", records: []string{`parent.test. CAA 0 issue "other-ca.example"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"parent.test"},
			reason: `RFC 8659 section 3: the search climbs from the name towards the root until a CAA RRset is found.`},
		{name: "closest", host: "www.sub.closest.test", records: []string{`sub.closest.test. CAA 0 issue "letsencrypt.org"`, `closest.test. CAA 0 issue "other-ca.example"`}, want: "",
			reason: `RFC 8659 section 3 / Boulder selectCAA: the set of the "closest parent" is the Relevant RRset; the ones above do not count.`},
		{name: "tld", host: "www.tld.caatld", records: []string{`caatld. CAA 0 issue "other-ca.example"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"caatld", "other-ca.example", `tld.caatld CAA 0 issue "letsencrypt.org"`},
			reason: `RFC 8659 section 3: the climb goes "up to but not including the DNS root", so the TLD's records count (Boulder looks up every label up to the TLD); records of the customer's own domain come first.`},
		{name: "tldcritical", host: "www.tldcritical.crittld", records: []string{`crittld. CAA 128 tbs "unknown"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"crittld", "critical", `tldcritical.crittld CAA 0 issue "letsencrypt.org"`},
			reason: `RFC 8659 section 4.1 applies to the TLD's Relevant RRset; a record at a closer name becomes the Relevant RRset in its place (Boulder selectCAA takes the first non-empty set).`},
		{name: "cnamename", host: "www.cnamename.test", records: []string{`cnamename-target.platform.test. CAA 0 issue "other-ca.example"`},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"cnamename-target.platform.test"},
			reason: `RFC 8659 section 3: CAA(X) is looked up "chasing aliases"; Boulder: "We depend on our resolver to snap CNAME and DNAME records."`},
		{name: "cnamestep", host: "www.sub.cnamestep.test", records: []string{
			`sub.cnamestep.test. CNAME holder.elsewhere.test.`,
			`holder.elsewhere.test. CAA 0 issue "other-ca.example"`,
			`cnamestep.test. CAA 0 issue "letsencrypt.org"`,
		}, want: dnscheck.CodeCAABlocksCA, mention: []string{"holder.elsewhere.test"},
			reason: `RFC 8659 section 3: at the step sub.cnamestep.test the alias is chased and its target's records are that step's CAA RRset, found before the parent's.`},
		{name: "cnamenoparent", host: "www.sub.cnamenoparent.test", records: []string{
			`sub.cnamenoparent.test. CNAME holder.elsewhere2.test.`,
			`elsewhere2.test. CAA 0 issue "other-ca.example"`,
			`cnamenoparent.test. CAA 0 issue "letsencrypt.org"`,
		}, want: "",
			reason: `RFC 8659 section 3 climbs Parent(X) of the name asked, not of an alias target (RFC 6844's target climbing was dropped), so elsewhere2.test does not count.`},
		{name: "servfailname", host: "www.servfailname.test", servfail: []string{"www.servfailname.test. CAA"},
			want: dnscheck.CodeDNSError, mention: []string{"CAA", "refuse", "SERVFAIL"},
			reason: `Boulder selectCAA: a lookup error before a non-empty answer "assume[s] there could have been real records hidden by it", and checkCAA turns it into a refusal.`},
		{name: "servfailparent", host: "www.sub.servfailparent.test", servfail: []string{"servfailparent.test. CAA"},
			want: dnscheck.CodeDNSError, mention: []string{"servfailparent.test", "SERVFAIL"},
			reason: `Boulder selectCAA: the parent's failure comes before any records were found, so it fails the check.`},
		{name: "servfailabove", host: "www.servfailabove.failtld", records: []string{`servfailabove.failtld. CAA 0 issue "letsencrypt.org"`}, servfail: []string{"failtld. CAA"}, want: "",
			reason: `Boulder selectCAA returns the first non-empty set; errors above it are never looked at.`},
		{name: "unknownid", records: []string{`unknownid.test. CAA 0 issue "other-ca.example"`}, cas: []dnscheck.CertificateAuthority{{}},
			want: dnscheck.CodeCAAUnchecked, mention: []string{"other-ca.example", "does not know"},
			reason: `No identity from --acme-caa-identity nor meta.caaIdentities (RFC 8555 7.1.1): the records may or may not name the CA, so a warning.`},
		{name: "unknownidnone", records: []string{`unknownidnone.test. CAA 0 issue ";"`}, cas: []dnscheck.CertificateAuthority{{}},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"forbid every"},
			reason: `Boulder: ";" prevents issuance "by any CA under any circumstance", whatever the CA's identity.`},
		{name: "fallbackca", records: []string{`fallbackca.test. CAA 0 issue "other-ca.example"`},
			cas: []dnscheck.CertificateAuthority{letsEncryptCA, {Identities: []string{"other-ca.example"}}}, want: "",
			reason: `With --acme-ca given twice, certificates fall back to the second CA, which these records allow.`},
		{name: "flagwins", records: []string{`flagwins.test. CAA 0 issue "letsencrypt.org"`}, flagIDs: []string{"pki.goog"},
			want: dnscheck.CodeCAABlocksCA, mention: []string{"pki.goog"},
			reason: `--acme-caa-identity takes the place of the directory's meta.caaIdentities, and pki.goog is not named.`},
	}
	if len(cases) < 20 {
		t.Fatalf("only %d cases", len(cases))
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host
			if host == "" {
				host = "www." + tc.name + ".test"
			}
			target := tc.name + "-target.platform.test"
			srv.add(t, host+". CNAME "+target+".")
			srv.add(t, tc.records...)
			srv.mu.Lock()
			for _, sf := range tc.servfail {
				srv.servfail[sf] = true
			}
			srv.mu.Unlock()
			cas := tc.cas
			if cas == nil {
				cas = []dnscheck.CertificateAuthority{letsEncryptCA}
			}
			c := &dnscheck.Checker{
				Resolvers: []string{addr}, Platform: dnscheck.Platform{CNAMETarget: target}, Timeout: time.Second,
				CAAIdentities:          tc.flagIDs,
				CertificateAuthorities: func(context.Context) []dnscheck.CertificateAuthority { return cas },
			}
			r := check(t, c, host)
			t.Logf("reason: %s", tc.reason)
			if tc.want == "" || tc.want == dnscheck.CodeCAAUnchecked {
				if !r.Verified {
					t.Fatalf("want verified, got %+v", r.Findings)
				}
			}
			if tc.want == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want no findings, got %+v", r.Findings)
				}
				return
			}
			if len(r.Findings) != 1 || r.Findings[0].Code != tc.want {
				t.Fatalf("want one %s finding, got verified=%v %+v", tc.want, r.Verified, r.Findings)
			}
			f := r.Findings[0]
			t.Logf("message: %s\nfix: %s\nexpected: %s", f.Message, f.Fix, f.Expected)
			if f.Warning != (tc.want == dnscheck.CodeCAAUnchecked) {
				t.Errorf("warning=%v", f.Warning)
			}
			domaintest.Contains(t, "message", f.Message+" "+strings.Join(f.Found, " "), tc.mention...)
			if f.Fix == "" {
				t.Error("no fix")
			}
			if tc.want != dnscheck.CodeCAABlocksCA {
				return
			}
			// The finding names the records that block ...
			if len(f.Found) == 0 {
				t.Fatal("the finding names no record that blocks")
			}
			// ... and the record that would allow: put it in place.
			if f.Expected == "" {
				if tc.cas != nil && len(tc.cas[0].Identities) == 0 {
					return // nothing can be named without the CA's identity
				}
				t.Fatal("the finding names no record that would allow")
			}
			domaintest.Contains(t, "message", f.Message+" "+f.Fix, f.Expected)
			srv.replaceCAA(t, f.Expected)
			if r := check(t, c, host); !r.Verified {
				t.Errorf("with %s in place, still not verified: %+v", f.Expected, r.Findings)
			}
		})
	}
}
