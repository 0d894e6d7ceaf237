package domaintest

import (
	"os/exec"
	"runtime"
	"syscall"
)

// spawns carries process starts to the one goroutine that starts them all.
var spawns = make(chan spawn)

type spawn struct {
	cmd  *exec.Cmd
	errc chan error
}

func init() {
	go func() {
		// Pdeathsig fires when the starting thread exits: a thread kept for the
		// test binary's life makes it "when the test binary dies".
		runtime.LockOSThread()
		for s := range spawns {
			s.errc <- s.cmd.Start()
		}
	}()
}

// start starts cmd so that it is killed with the test binary, even one
// dying without cleanups.
func start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	errc := make(chan error, 1)
	spawns <- spawn{cmd: cmd, errc: errc}
	return <-errc
}
