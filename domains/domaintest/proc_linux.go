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
		// Pdeathsig fires when the thread that started the child exits, not
		// the process: a thread kept for the life of the test binary makes
		// it mean "when the test binary dies".
		runtime.LockOSThread()
		for s := range spawns {
			s.errc <- s.cmd.Start()
		}
	}()
}

// start starts cmd so that it is killed with the test binary, even when that
// dies without running its cleanups (a test timeout panics and exits).
func start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	errc := make(chan error, 1)
	spawns <- spawn{cmd: cmd, errc: errc}
	return <-errc
}
