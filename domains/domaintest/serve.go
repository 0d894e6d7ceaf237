package domaintest

import (
	"net"
	"testing"
)

// ServeConns hands each connection ln accepts to handle, in the accepting
// goroutine (handle starts a goroutine of its own for a long exchange),
// until ln is closed: at the latest when the test ends.
func ServeConns(tb testing.TB, ln net.Listener, handle func(net.Conn)) {
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handle(c)
		}
	}()
}
