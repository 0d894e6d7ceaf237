package acmedns

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Default caps on TCP connections: DNS over TCP is the rare fallback of a
// truncated answer, so a few per source network serve any resolver or CA,
// and the total stays far from the descriptors the HTTP side needs.
const (
	DefaultMaxTCPConns           = 256
	DefaultMaxTCPConnsPerNetwork = 8
)

// sourceNetwork is the network a client's limits count by (IPv4 /24, IPv6
// /56), so that a host cannot escape them by changing addresses.
func sourceNetwork(addr net.Addr) (netip.Prefix, bool) {
	var ip netip.Addr
	if a, ok := addr.(interface{ AddrPort() netip.AddrPort }); ok { // *net.UDPAddr, *net.TCPAddr
		ip = a.AddrPort().Addr().Unmap()
	}
	bits := 24
	if ip.Is6() {
		bits = 56
	}
	network, err := ip.Prefix(bits)
	return network, err == nil
}

// capListener accepts TCP connections within the caps, counted from accept
// to close; one over a cap is closed at once, unanswered.
type capListener struct {
	net.Listener
	maxTotal, maxPer int

	mu    sync.Mutex
	total int
	per   map[netip.Prefix]int
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if network, ok := l.take(c.RemoteAddr()); ok {
			return &cappedConn{Conn: c, release: func() { l.release(network) }}, nil
		}
		c.Close()
	}
}

// take counts a new connection from addr, or says it is over a cap.
func (l *capListener) take(addr net.Addr) (netip.Prefix, bool) {
	network, ok := sourceNetwork(addr)
	if !ok {
		return network, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.maxTotal || l.per[network] >= l.maxPer {
		return network, false
	}
	l.total++
	l.per[network]++
	return network, true
}

func (l *capListener) release(network netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.per[network]--; l.per[network] <= 0 {
		delete(l.per, network) // the map holds only networks with connections open
	}
}

// cappedConn gives its place back when it closes, once.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// acceptMsg is dns.DefaultMsgAcceptFunc, but unimplemented opcodes go to
// ServeDNS, which answers NOTIMP within the source's allowance.
func acceptMsg(dh dns.Header) dns.MsgAcceptAction {
	a := dns.DefaultMsgAcceptFunc(dh)
	if a == dns.MsgRejectNotImplemented {
		return dns.MsgAccept
	}
	return a
}

// limitedWriter keeps the dns package's own answers (FORMERR) within the
// source's allowance, as ServeDNS does: otherwise they would be a way to
// amplify towards a forged address.
type limitedWriter struct {
	dns.Writer
	s *Server
}

func (w limitedWriter) Write(m []byte) (int, error) {
	// ServeDNS never answers FORMERR: one is the dns package's.
	if len(m) >= 4 && int(m[3]&0x0f) == dns.RcodeFormatError {
		rw, ok := w.Writer.(dns.ResponseWriter)
		if !ok || !w.s.allow(rw.RemoteAddr(), time.Now()) {
			return len(m), nil // dropped, as ServeDNS drops what is over the limit
		}
	}
	return w.Writer.Write(m)
}
