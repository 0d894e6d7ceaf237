package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listenError says in one line why the listener of --flag could not be
// opened on addr, and what to do about it.
func listenError(flag, addr string, err error) error {
	env := envName(flag)
	host, port, splitErr := net.SplitHostPort(addr)
	if splitErr != nil {
		return fmt.Errorf("--%s %q (%s) is not host:port, such as localhost:8080 or :443: %v", flag, addr, env, splitErr)
	}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("--%s %s: the address is in use by another program (another petstore?); stop it, or start with another port, e.g. --%s %s (%s)", flag, addr, flag, net.JoinHostPort(host, nextPort(port)), env)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("--%s %s: binding port %s needs root or the CAP_NET_BIND_SERVICE capability (sudo setcap cap_net_bind_service=+ep ./petstore, or AmbientCapabilities=CAP_NET_BIND_SERVICE in a systemd unit); or use a port above 1023 (%s)", flag, addr, port, env)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Errorf("--%s %s: %s is not an address of this machine; give one of its own, or :%s for all of them (%s)", flag, addr, host, port, env)
	}
	return fmt.Errorf("--%s %s (%s): %w", flag, addr, env, err)
}

// nextPort suggests the port after port, for the message of a busy one.
func nextPort(port string) string {
	var n int
	if _, err := fmt.Sscanf(port, "%d", &n); err != nil || n <= 0 || n >= 65535 {
		return "8081"
	}
	return fmt.Sprint(n + 1)
}
