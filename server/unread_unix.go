//go:build unix

package server

import (
	"net"
	"syscall"

	proxyproto "github.com/pires/go-proxyproto"
)

// hasUnread reports whether client bytes wait unread in the socket. Bytes
// the PROXY reader buffered are not seen; the server's first read takes
// them at once (see guardedConn.read).
func hasUnread(c net.Conn) bool {
	if pc, ok := c.(*proxyproto.Conn); ok {
		c = pc.Raw()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	var b [1]byte
	// Control, not Read: Read would wait for the lock of a read in progress.
	_ = rc.Control(func(fd uintptr) {
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}
