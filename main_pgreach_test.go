package main

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"petstore/store/postgres/pgtest"
)

// TestUnreachableDatabaseSaysWhy: a database that cannot be reached for a
// reason other than silence (its host's name does not resolve, nothing
// listens on its port, the URL's sslmode=require against a server without
// TLS) is named by that reason in /readyz and in start-up's log line, at
// once, not as a wait for an answer that never came.
func TestUnreachableDatabaseSaysWhy(t *testing.T) {
	parallel(t)
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}()
	for _, c := range []struct{ what, host, sslmode, words string }{
		{"a name that does not resolve", "db.invalid:5432", "disable", "name does not resolve"},
		{"a port nothing listens on", closed, "disable", "refused"},
		{"sslmode=require without TLS", "", "require", "does not offer TLS"},
	} {
		u, err := url.Parse(pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		if c.host != "" {
			u.Host = c.host
		}
		q := u.Query()
		q.Set("sslmode", c.sslmode)
		u.RawQuery = q.Encode()
		in := start(t, nil, pgFlags(u.String())...)
		code, body, header := in.get(t, "GET", "/readyz", "")
		wantUnavailable(t, c.what+": /readyz", code, body, header)
		if !strings.Contains(body, c.words) {
			t.Errorf("%s: /readyz does not say %q: %s", c.what, c.words, body)
		}
		if strings.Contains(in.out.String(), "did not answer within") {
			t.Errorf("%s: the log says the database did not answer:\n%s", c.what, in.out)
		}
		in.stop(t)
	}
}
