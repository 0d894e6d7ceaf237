//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package events

import (
	"errors"
	"net"
	"syscall"
)

// leanSupported: quiet can look at a connection without reading it.
const leanSupported = true

// quiet reports whether c is open with nothing to read, without waiting
// or taking anything: bytes there came before any request asked for them,
// and a closed connection takes no request.
func quiet(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var perr error
	var b [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		_, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}); err != nil {
		return false
	}
	return errors.Is(perr, syscall.EAGAIN) || errors.Is(perr, syscall.EWOULDBLOCK)
}
