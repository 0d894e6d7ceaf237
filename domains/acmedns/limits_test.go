package acmedns_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"petstore/domains/acmedns"
	"petstore/domains/domaintest"
)

// dialFrom opens a TCP or UDP connection to server from the loopback address ip
// (all of 127/8 is this host; 127.0.N.0/24 are different networks).
func dialFrom(t *testing.T, network string, ip net.IP, server string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second}
	if network == "udp" {
		d.LocalAddr = &net.UDPAddr{IP: ip}
	}
	c, err := d.Dial(network, server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c without a word: its
// read ends (EOF or reset) well before the server's read timeout, which
// the test sets far away, could have closed it.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return (errors.Is(err, io.EOF) || err != nil) && !(errors.As(err, &ne) && ne.Timeout())
}

// askTCPFrom asks the zone's SOA over TCP from ip.
func askTCPFrom(ip net.IP, server string) (*dns.Msg, error) {
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}}
	q := new(dns.Msg)
	q.SetQuestion(zone+".", dns.TypeSOA)
	r, _, err := c.Exchange(q, server)
	return r, err
}

// TestTCPConnectionsAreCapped: connections held open without a query count
// against the caps per source network and in all; one over a cap is
// closed at once; a client of another network is still answered while one
// network holds its share; a connection closed gives its place back.
func TestTCPConnectionsAreCapped(t *testing.T) {
	db := domaintest.OpenStore(t)
	_, tcp := startServer(t, db, acmedns.Config{MaxTCPConns: 6, MaxTCPConnsPerNetwork: 3, ReadTimeout: time.Minute, IdleTimeout: time.Minute})
	a, b, c, d := net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 1, 1), net.IPv4(127, 0, 2, 1), net.IPv4(127, 0, 3, 1)

	// Network a holds its 3; a 4th, and a 4th from another address of the
	// same network, are closed.
	var held []net.Conn
	for range 3 {
		held = append(held, dialFrom(t, "tcp", a, tcp))
	}
	for _, ip := range []net.IP{a, net.IPv4(127, 0, 0, 2)} {
		if !closedByServer(dialFrom(t, "tcp", ip, tcp)) {
			t.Errorf("a 4th connection from %v's network was not closed", ip)
		}
	}
	// A client of network b is answered meanwhile.
	if r, err := askTCPFrom(b, tcp); err != nil || r.Rcode != dns.RcodeSuccess {
		t.Fatalf("a client of another network while one holds its share: %v, %v", r, err)
	}
	// Network b and c fill the total: c's second is over it. The server
	// gives the places of the connections it closed, and of b's question,
	// back in its own time: c's first is dialed again until it is kept.
	for range 2 {
		held = append(held, dialFrom(t, "tcp", b, tcp))
	}
	domaintest.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		conn := dialFrom(t, "tcp", c, tcp)
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := conn.Read(make([]byte, 1)); !errors.As(err, new(net.Error)) || !err.(net.Error).Timeout() {
			conn.Close()
			return fmt.Errorf("the 6th connection: %v, want it kept", err)
		}
		held = append(held, conn)
		return nil
	})
	if !closedByServer(dialFrom(t, "tcp", d, tcp)) {
		t.Errorf("a connection over the total was not closed")
	}
	// One closes: its place is free again (the server sees the close in
	// its own time).
	held[0].Close()
	domaintest.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		r, err := askTCPFrom(d, tcp)
		if err != nil || r.Rcode != dns.RcodeSuccess {
			return errors.New("no answer after a connection closed")
		}
		return nil
	})
	// The held ones were never closed by the server.
	for i, c := range held[1:] {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); !errors.As(err, new(net.Error)) || !err.(net.Error).Timeout() {
			t.Errorf("held connection %d: %v, want it open", i+1, err)
		}
	}
}

// TestIdleTCPConnectionIsClosed: a connection that sends no query is
// closed at the read timeout.
func TestIdleTCPConnectionIsClosed(t *testing.T) {
	db := domaintest.OpenStore(t)
	_, tcp := startServer(t, db, acmedns.Config{ReadTimeout: 200 * time.Millisecond})
	c := dialFrom(t, "tcp", net.IPv4(127, 0, 0, 1), tcp)
	if !closedByServer(c) {
		t.Error("an idle connection was not closed at the read timeout")
	}
}

// TestFormErrIsLimited: messages the server cannot parse are answered
// FORMERR within the source network's allowance, as other questions are,
// not beyond it.
func TestFormErrIsLimited(t *testing.T) {
	db := domaintest.OpenStore(t)
	const burst = 5
	udp, _ := startServer(t, db, acmedns.Config{Rate: 0.001, Burst: burst})
	conn := dialFrom(t, "udp", net.IPv4(127, 0, 0, 1), udp)
	// A header that claims two questions: FORMERR from the dns package.
	bad := []byte{0x12, 0x34, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}
	const sent = 50
	for range sent {
		if _, err := conn.Write(bad); err != nil {
			t.Fatal(err)
		}
	}
	formErrs := 0
	buf := make([]byte, 512)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := conn.Read(buf)
		if err != nil {
			break
		}
		if n >= 4 && buf[3]&0x0f == dns.RcodeFormatError {
			formErrs++
		}
	}
	if formErrs == 0 || formErrs > burst {
		t.Errorf("%d FORMERR answers to %d malformed messages, want 1 to %d (the allowance)", formErrs, sent, burst)
	}
	// The allowance is one: the network's questions are not answered now.
	q := new(dns.Msg)
	q.SetQuestion(zone+".", dns.TypeSOA)
	if r, _, err := (&dns.Client{Net: "udp", Timeout: 300 * time.Millisecond, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}}}).Exchange(q, udp); err == nil {
		t.Errorf("a question after the FORMERR flood was answered: %v", r)
	}
}
