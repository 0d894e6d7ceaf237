// Package acmedns is the authoritative DNS server of the zone customers
// delegate their ACME DNS-01 challenges to: TXT for <label>.<zone> from
// the store (so every instance answers the same), the zone's SOA and NS,
// REFUSED elsewhere, with answers limited per source network against
// amplification and TCP connections capped against descriptor exhaustion.
package acmedns

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/time/rate"

	"petstore/bounded"
)

// Store is the key/value space shared by every instance, where the
// challenges' TXT values live.
type Store interface {
	KVGet(ctx context.Context, key string) ([]byte, error)
	KVPut(ctx context.Context, key string, value []byte) error
	KVDelete(ctx context.Context, key string) error
}

// keyPrefix is where TXT values are kept in the key/value space, per label.
const keyPrefix = "acmedns/"

// TTL is every answer's TTL: a challenge's value changes with each order,
// and resolvers must not keep an old one.
const TTL = 10

// Default limits per source network (an IPv4 /24 or an IPv6 /56): well
// above what one issuance asks of the CA's validation servers.
const (
	DefaultRate  = 20
	DefaultBurst = 60
)

// maxNetworks bounds the limits' memory. Past it, a new network replaces
// the least recently seen only if that one's allowance is whole, else gets
// no answer: a flood from many networks cannot erase a limit.
const maxNetworks = 100_000

// Config configures a Server.
type Config struct {
	// Zone is the delegated zone, without a trailing dot.
	Zone string
	// Nameservers are the host names of the zone's NS records, as the
	// operator delegated it; empty means ns.<Zone>.
	Nameservers []string
	Store       Store
	// Rate and Burst limit the answers per source network per second; zero
	// means the defaults.
	Rate  rate.Limit
	Burst int
	// Timeout bounds the store read behind an answer (SERVFAIL past it);
	// zero means 2 s.
	Timeout time.Duration
	// MaxTCPConns and MaxTCPConnsPerNetwork cap open TCP connections, in all
	// and per source network (zero: the defaults); one over is closed at once.
	MaxTCPConns           int
	MaxTCPConnsPerNetwork int
	// ReadTimeout is how long a query may take to arrive, over TCP from the
	// accept; zero means 2 s. IdleTimeout closes a TCP connection idle after
	// an answer; zero means 5 s.
	ReadTimeout, IdleTimeout time.Duration
	Logger                   *slog.Logger
}

// Server answers DNS questions for the zone.
type Server struct {
	zone string // fully qualified, lower case
	soa  dns.RR
	ns   []dns.RR
	db   Store
	cfg  Config
	log  *slog.Logger

	mu       sync.Mutex
	limiters *bounded.Cache[netip.Prefix, *rate.Limiter]
	servers  []*dns.Server
}

// New checks cfg and builds a server.
func New(cfg Config) (*Server, error) {
	zone := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(cfg.Zone), "."))
	if _, ok := dns.IsDomainName(zone); !ok || strings.Count(zone, ".") < 1 {
		return nil, fmt.Errorf("--acme-dns-zone %q: not a domain name of at least two labels", cfg.Zone)
	}
	if cfg.Store == nil {
		return nil, errors.New("acmedns: Config.Store is required")
	}
	cfg.Rate = cmp.Or(cfg.Rate, DefaultRate)
	cfg.Burst = cmp.Or(cfg.Burst, DefaultBurst)
	cfg.Timeout = cmp.Or(cfg.Timeout, 2*time.Second)
	cfg.MaxTCPConns = cmp.Or(cfg.MaxTCPConns, DefaultMaxTCPConns)
	cfg.MaxTCPConnsPerNetwork = cmp.Or(cfg.MaxTCPConnsPerNetwork, DefaultMaxTCPConnsPerNetwork)
	cfg.ReadTimeout = cmp.Or(cfg.ReadTimeout, 2*time.Second)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, 5*time.Second)
	s := &Server{zone: dns.Fqdn(zone), db: cfg.Store, cfg: cfg, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), limiters: bounded.New[netip.Prefix, *rate.Limiter](maxNetworks, nil)}
	nss := cfg.Nameservers
	if len(nss) == 0 {
		nss = []string{"ns." + zone}
	}
	for _, n := range nss {
		s.ns = append(s.ns, &dns.NS{Hdr: s.header(s.zone, dns.TypeNS), Ns: dns.Fqdn(strings.ToLower(n))})
	}
	s.soa = &dns.SOA{
		Hdr: s.header(s.zone, dns.TypeSOA), Ns: s.ns[0].(*dns.NS).Ns, Mbox: "hostmaster." + s.zone,
		Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: TTL,
	}
	return s, nil
}

func (s *Server) header(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: TTL}
}

// ServeDNS answers one question.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if !s.allow(w.RemoteAddr(), time.Now()) {
		return // no answer: a flood gets nothing to amplify
	}
	m := new(dns.Msg)
	m.SetReply(req)
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		m.Rcode = dns.RcodeNotImplemented
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	defer s.write(w, req, m)
	if !dns.IsSubDomain(s.zone, name) {
		m.Rcode = dns.RcodeRefused
		return
	}
	m.Authoritative = true
	switch {
	case name == s.zone:
		switch q.Qtype {
		case dns.TypeSOA:
			m.Answer = []dns.RR{s.soa}
		case dns.TypeNS:
			m.Answer = s.ns
		default:
			m.Ns = []dns.RR{s.soa}
		}
	default:
		label := strings.TrimSuffix(name, "."+s.zone)
		values, err := s.lookup(label)
		switch {
		case err != nil:
			s.log.Warn("acme dns: reading a challenge from the store", "label", label, "err", err)
			m.Authoritative = false
			m.Rcode = dns.RcodeServerFailure
		case values == nil:
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{s.soa}
		case q.Qtype == dns.TypeTXT:
			for _, v := range values {
				m.Answer = append(m.Answer, &dns.TXT{Hdr: s.header(q.Name, dns.TypeTXT), Txt: []string{v}})
			}
		default:
			m.Ns = []dns.RR{s.soa}
		}
	}
}

// write sends m truncated, with TC, to the size a UDP client announced
// (512 bytes without EDNS0): an answer never outgrows what was asked.
func (s *Server) write(w dns.ResponseWriter, req, m *dns.Msg) {
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		m.Truncate(size)
	}
	_ = w.WriteMsg(m)
}

// lookup reads a label's TXT values; nil when it has none (or is not a
// label of the zone).
func (s *Server) lookup(label string) ([]string, error) {
	if !validLabel(label) {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	return readTXT(ctx, s.db, label)
}

// validLabel: one DNS label of letters, digits and hyphens.
func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// SetTXT makes <label>.<zone> answer values on every instance sharing kv.
func SetTXT(ctx context.Context, kv Store, label string, values []string) error {
	label = strings.ToLower(label)
	if !validLabel(label) {
		return fmt.Errorf("acmedns: %q is not one DNS label", label)
	}
	b, _ := json.Marshal(values) // a []string always encodes
	return kv.KVPut(ctx, keyPrefix+label, b)
}

// DeleteTXT makes <label>.<zone> unknown again (NXDOMAIN).
func DeleteTXT(ctx context.Context, kv Store, label string) error {
	return kv.KVDelete(ctx, keyPrefix+strings.ToLower(label))
}

// allow spends, at now, one answer of the source network's allowance.
func (s *Server) allow(addr net.Addr, now time.Time) bool {
	network, ok := sourceNetwork(addr)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.limiters.Get(network)
	if !ok {
		if s.limiters.Len() >= maxNetworks {
			if _, oldest, _ := s.limiters.GetOldest(); oldest.TokensAt(now) < float64(s.cfg.Burst) {
				return false
			}
		}
		l = rate.NewLimiter(s.cfg.Rate, s.cfg.Burst)
		s.limiters.Add(network, l) // evicts the oldest when full
	}
	return l.AllowN(now, 1)
}

// Serve answers on pc and ln, the UDP and TCP sockets of one port (from
// Listen, or passed by an upgrade in place), until Shutdown, and returns
// the addresses it listens on.
func (s *Server) Serve(pc net.PacketConn, ln net.Listener) (udp, tcp net.Addr, err error) {
	addr := ln.Addr().String()
	// A silent TCP client is dropped at the read timeout; connections are
	// capped (limits.go).
	capped := &capListener{Listener: ln, maxTotal: s.cfg.MaxTCPConns, maxPer: s.cfg.MaxTCPConnsPerNetwork, per: map[netip.Prefix]int{}}
	servers := []*dns.Server{
		{PacketConn: pc, Handler: s, ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: 2 * time.Second},
		{Listener: capped, Handler: s, ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: 2 * time.Second, IdleTimeout: func() time.Duration { return s.cfg.IdleTimeout }},
	}
	for _, srv := range servers {
		srv.MsgAcceptFunc = acceptMsg
		srv.DecorateWriter = func(w dns.Writer) dns.Writer { return limitedWriter{w, s} }
	}
	s.mu.Lock()
	s.servers = append(s.servers, servers...)
	s.mu.Unlock()
	for _, srv := range servers {
		started, failed := make(chan struct{}), make(chan error, 1)
		srv.NotifyStartedFunc = func() { close(started) }
		go func() {
			if err := srv.ActivateAndServe(); err != nil {
				s.log.Error("acme dns server stopped", "err", err)
				failed <- err
			}
		}()
		select {
		case <-started:
		case err := <-failed:
			_ = s.Shutdown(context.Background())
			return nil, nil, fmt.Errorf("--dns-listen %s: %w", addr, err)
		}
	}
	return pc.LocalAddr(), ln.Addr(), nil
}

// Shutdown stops answering.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	servers := s.servers
	s.servers = nil
	s.mu.Unlock()
	var errs []error
	for _, srv := range servers {
		errs = append(errs, srv.ShutdownContext(ctx))
	}
	return errors.Join(errs...)
}

// Listen binds UDP, then TCP on the port UDP got (port 0: one port for
// both), trying a few ports since the TCP twin may be taken.
func Listen(addr string) (net.PacketConn, net.Listener, error) {
	_, port, _ := net.SplitHostPort(addr)
	tries := 1
	if port == "0" {
		tries = 20
	}
	for i := 0; ; i++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("--dns-listen %s (UDP): %w", addr, err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		if i+1 >= tries || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, fmt.Errorf("--dns-listen %s (TCP): %w", addr, err)
		}
	}
}
