package dnscheck_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"petstore/domains/dnscheck"
	"petstore/store"
)

// checkProfile is an independent IDNA2008 lookup profile with DNS length
// checks, to hold Normalize's output to. Like Normalize it allows "--" in
// positions 3-4 of a label (names such as r3---sn-abc.example.com resolve),
// which idna.Lookup would refuse.
var checkProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
	idna.VerifyDNSLength(true),
)

// FuzzNormalize: Normalize never panics; it refuses with a shown-as-is
// EINVALID error, or returns a name that is lower-case ASCII letters,
// digits, hyphens and dots, at most 253 characters, a fixed point of
// Normalize, and a valid IDNA name whose punycode labels decode and encode
// back to themselves.
//
//	go test -run XXX -fuzz FuzzNormalize -fuzztime 60s ./domains/
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"shop.example.com", "Shop.Example.COM.", " shop.example.com ", "Bücher.example", "xn--bcher-kva.example",
		"r3---sn-abc.example.com", "ＳＨＯＰ．ＥＸＡＭＰＬＥ．ＣＯＭ", "１２７．０．０．１", "127.0.0.1", "[::1]", "::ffff:1.2.3.4",
		"https://shop.example.com/x", "shop.example.com:443", "a@b.example", "*.example.com", "co.uk", "github.io",
		"example", "a..example.com", ".example.com", "-a.example.com", "a-.example.com", "xn--.example.com",
		"xn--zz.example.com", "xn--a-ecp.ru", "ß.example", "ς.example", "i\u0307.example", "a\u200db.example",
		"عربي.example", "a\u05d0.example", "example.com.", "10.1", "1.2.3.4.5", "0x7f.1", "e\u0301.example",
		strings.Repeat("a", 63) + ".example.com", strings.Repeat("a", 64) + ".example.com",
		strings.Repeat("a.", 126) + "com", strings.Repeat("ü", 60) + ".example",
		"*.shop.example.com", "*.co.uk", "a.*.example.com", "*.*.example.com", "*", "*.", "*.１２７．０．０．１",
		"\x00.example.com", "a\xff.example.com", "a\u00ad.example.com", "ﬀ.example", "℡.example", "⑴.example",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkWildcard(t, in)
		out, err := dnscheck.Normalize(in)
		if err != nil {
			var se *store.Error
			if !errors.As(err, &se) || se.Code != store.EINVALID || se.Message == "" {
				t.Fatalf("Normalize(%q): error %v is not an EINVALID store error with a message", in, err)
			}
			if out != "" {
				t.Fatalf("Normalize(%q) = %q with an error", in, out)
			}
			return
		}
		if !utf8.ValidString(in) {
			t.Fatalf("Normalize(%q) = %q: invalid UTF-8 accepted", in, out)
		}
		if out == "" || len(out) > 253 {
			t.Fatalf("Normalize(%q) = %q: length %d", in, out, len(out))
		}
		for i := 0; i < len(out); i++ {
			c := out[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
				t.Fatalf("Normalize(%q) = %q: byte %q at %d", in, out, c, i)
			}
		}
		again, err := dnscheck.Normalize(out)
		if err != nil || again != out {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q, %v: not idempotent", in, out, out, again, err)
		}
		ascii, err := checkProfile.ToASCII(out)
		if err != nil || ascii != out {
			t.Fatalf("Normalize(%q) = %q, which IDNA refuses or changes: %q, %v", in, out, ascii, err)
		}
		for _, label := range strings.Split(out, ".") {
			if !strings.HasPrefix(label, "xn--") {
				continue
			}
			u, err := checkProfile.ToUnicode(label)
			if err != nil {
				t.Fatalf("Normalize(%q) = %q: label %q does not decode: %v", in, out, label, err)
			}
			if back, err := checkProfile.ToASCII(u); err != nil || back != label {
				t.Fatalf("Normalize(%q) = %q: label %q decodes to %q, which encodes to %q, %v", in, out, label, u, back, err)
			}
		}
	})
}

// checkWildcard holds NormalizeWildcard to its rules: a refusal is an
// EINVALID with a message; an answer is "*." and a name Normalize gives
// back unchanged, with no other "*", at most 253 characters, a fixed
// point, and a wildcard that covers exactly the names one label below.
func checkWildcard(t *testing.T, in string) {
	out, err := dnscheck.NormalizeWildcard(in)
	if err != nil {
		if store.ErrorCode(err) != store.EINVALID || store.ErrorMessage(err) == "" || out != "" {
			t.Fatalf("NormalizeWildcard(%q) = %q, %v", in, out, err)
		}
		return
	}
	base, ok := strings.CutPrefix(out, "*.")
	if !ok || strings.Contains(base, "*") || len(out) > 253 {
		t.Fatalf("NormalizeWildcard(%q) = %q", in, out)
	}
	if b, err := dnscheck.Normalize(base); err != nil || b != base {
		t.Fatalf("NormalizeWildcard(%q) = %q, whose base Normalize gives as %q, %v", in, out, b, err)
	}
	if again, err := dnscheck.NormalizeWildcard(out); err != nil || again != out {
		t.Fatalf("NormalizeWildcard(%q) = %q, but again %q, %v", in, out, again, err)
	}
	if !dnscheck.Covers(out, "a."+base) || dnscheck.Covers(out, base) || dnscheck.Covers(out, "a.b."+base) {
		t.Fatalf("%q covers the wrong names", out)
	}
}
