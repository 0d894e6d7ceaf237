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
		raised := l
		raised.Cur = raised.Max
		if err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			l = raised
		}
	}
	return int(min(l.Cur, 1<<30)), err
}
