//go:build !unix

package server

import "net"

// hasUnread cannot look into the socket here: shutdown's patience alone
// decides.
func hasUnread(net.Conn) bool { return false }
