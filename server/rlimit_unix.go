//go:build unix

package server

import "syscall"

// raiseFileLimit raises the soft limit on open files to the hard one (Go
// does so itself at start, but a service that counts on it says so) and
// returns the limit in force.
func raiseFileLimit() (int, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	var err error
	if l.Cur < l.Max {
		if err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: l.Max, Max: l.Max}); err == nil {
			l.Cur = l.Max
		}
	}
	return int(min(l.Cur, 1<<30)), err
}
