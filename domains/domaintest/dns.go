package domaintest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// DNS is a running pebble-challtestsrv serving DNS only, on loopback.
// Unlike a real zone: unknown names get empty answers; a CNAME hides other
// records on its name (put CAA on the parent); SOA and NS get NOTIMP, so a
// checker uses it as a resolver; TTLs are 0; names match case-sensitively.
type DNS struct {
	addr string // DNS host:port
	mgmt string // management API base URL
}

// StartDNS starts a challtestsrv on free loopback ports, waits until it
// answers, and stops it when tb's test ends.
func StartDNS(tb testing.TB) *DNS {
	tb.Helper()
	bin := toolBinary(tb, challtestsrvPkg)
	d := &DNS{}
	startServer(tb, "challtestsrv", 15*time.Second, func() (*exec.Cmd, func() error) {
		pc, ln := listenDNS(tb, true) // free for both, as challtestsrv listens on both
		pc.Close()
		ln.Close()
		d.addr = pc.LocalAddr().String()
		mgmt := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))
		d.mgmt = "http://" + mgmt
		return exec.Command(bin,
			"-dnsserver", d.addr,
			"-management", mgmt,
			"-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", "",
			"-defaultIPv4", "", "-defaultIPv6", "",
		), d.ready
	})
	return d
}

// ready checks that this very server serves DNS over UDP and TCP and its
// management API (a record set through one comes back from the other), so
// that another test's server that won a port race is not taken for ours.
func (d *DNS) ready() error {
	host := fmt.Sprintf("ready-%d.domaintest.invalid", rand.Uint64())
	ip := netip.AddrFrom4([4]byte{127, byte(rand.IntN(255) + 1), byte(rand.IntN(256)), byte(rand.IntN(255) + 1)})
	if err := d.post("/add-a", map[string]any{"host": host, "addresses": []string{ip.String()}}); err != nil {
		return err
	}
	for _, network := range []string{"udp", "tcp"} {
		r, err := exchange(network, d.addr, dns.Fqdn(host), dns.TypeA)
		if err != nil {
			return err
		}
		if len(r.Answer) == 1 {
			if a, ok := r.Answer[0].(*dns.A); ok && a.A.Equal(ip.AsSlice()) {
				continue
			}
		}
		return fmt.Errorf("%s answer %v, want A %s", network, r.Answer, ip)
	}
	return d.post("/clear-a", map[string]any{"host": host})
}

// Addr returns the DNS server's address, host:port (UDP and TCP).
func (d *DNS) Addr() string { return d.addr }

var mgmtClient = &http.Client{Timeout: 5 * time.Second}

func (d *DNS) post(path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := mgmtClient.Post(d.mgmt+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s %s: %s", path, b, resp.Status)
	}
	return nil
}

func (d *DNS) must(tb testing.TB, path string, body any) {
	tb.Helper()
	if err := d.post(path, body); err != nil {
		tb.Fatalf("domaintest: challtestsrv: %v", err)
	}
}

// fqdn puts a name in the form challtestsrv stores and the checker asks for.
func fqdn(name string) string {
	return dns.Fqdn(strings.ToLower(strings.TrimSpace(name)))
}

func checkIPs(tb testing.TB, want6 bool, ips []string) {
	tb.Helper()
	if len(ips) == 0 {
		tb.Fatalf("domaintest: no address given")
	}
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		// challtestsrv silently drops addresses of the wrong family: refuse
		// them here, where the mistake is.
		if err != nil || ip.Is6() != want6 || ip.Is4In6() {
			tb.Fatalf("domaintest: %q is not an IPv%s address", s, map[bool]string{false: "4", true: "6"}[want6])
		}
	}
}

// AddA adds IPv4 addresses answered for A queries on host.
func (d *DNS) AddA(tb testing.TB, host string, ips ...string) {
	tb.Helper()
	checkIPs(tb, false, ips)
	d.must(tb, "/add-a", map[string]any{"host": fqdn(host), "addresses": ips})
}

// AddAAAA adds IPv6 addresses answered for AAAA queries on host.
func (d *DNS) AddAAAA(tb testing.TB, host string, ips ...string) {
	tb.Helper()
	checkIPs(tb, true, ips)
	d.must(tb, "/add-aaaa", map[string]any{"host": fqdn(host), "addresses": ips})
}

// SetCNAME makes host an alias of target, kept as given (case too), as a
// provider would store it.
func (d *DNS) SetCNAME(tb testing.TB, host, target string) {
	tb.Helper()
	d.must(tb, "/set-cname", map[string]any{"host": fqdn(host), "target": target})
}

// AddCAA adds a CAA record (flags 0) on host.
func (d *DNS) AddCAA(tb testing.TB, host, tag, value string) {
	tb.Helper()
	d.must(tb, "/add-caa", map[string]any{"host": fqdn(host), "policies": []map[string]string{{"tag": tag, "value": value}}})
}

// SetServfail makes every query for host (exactly) answer SERVFAIL.
func (d *DNS) SetServfail(tb testing.TB, host string) {
	tb.Helper()
	d.must(tb, "/set-servfail", map[string]any{"host": fqdn(host)})
}

// Record names what Clear removes from a host.
type Record string

// The kinds Clear takes; Servfail undoes SetServfail.
const (
	A        Record = "a"
	AAAA     Record = "aaaa"
	CNAME    Record = "cname"
	CAA      Record = "caa"
	Servfail Record = "servfail"
)

// Clear removes host's records of kind.
func (d *DNS) Clear(tb testing.TB, kind Record, host string) {
	tb.Helper()
	d.must(tb, "/clear-"+string(kind), map[string]any{"host": fqdn(host)})
}

// SetDefaultIPv4 sets the address of every name without A records; ""
// leaves them without.
func (d *DNS) SetDefaultIPv4(tb testing.TB, ip string) {
	tb.Helper()
	d.must(tb, "/set-default-ipv4", map[string]any{"ip": ip})
}
