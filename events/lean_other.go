//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package events

import "net"

// leanSupported: without a way to look at a connection without reading
// it, every webhook has a Transport.
const leanSupported = false

func quiet(net.Conn) bool { return false }
