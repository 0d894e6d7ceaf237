package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"petstore/store/postgres/pgtest"
)

// proc is a server process the benchmark started: petstore or the Echo
// baseline.
type proc struct {
	name    string
	cmd     *exec.Cmd
	addr    string // 127.0.0.1:port
	started time.Time
	ready   time.Duration   // from the start to the first 200 on /readyz
	catID   int64           // the category of its store's pets
	done    chan struct{}   // closed when the process has exited
	waitErr error           // set before done is closed
	stopped bool            // we asked it to stop
	stderr  string          // the file in b.dir it writes its stderr to
	db      *pgtest.Cluster // the PostgreSQL server it serves from, if any
	client  *client         // for its rows and the API calls of their set-up
}

// startServer starts bin with args, "ADDR" replaced by a free loopback
// address, and waits for 200 on /readyz. Its log also goes to watch when
// not nil. The process dies with the benchmark (setParentDeathSignal) or
// in b.cleanup.
func (b *bench) startServer(ctx context.Context, name, bin string, watch io.Writer, args ...string) (p *proc, err error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	args = slices.Clone(args)
	args[slices.Index(args, "ADDR")] = addr
	cmd := exec.Command(bin, args...)
	// No PETSTORE_ variables: the caller's settings must not change what is
	// measured.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PETSTORE_") })
	stderr, err := os.Create(filepath.Join(b.dir, fmt.Sprintf("stderr-%d", len(b.procs))))
	if err != nil {
		return nil, err
	}
	defer stderr.Close() // the process writes to its own copy
	cmd.Stderr = stderr
	p = &proc{name: name, cmd: cmd, addr: addr, done: make(chan struct{}), stderr: stderr.Name(), client: newClient(b.cfg.connections)}
	if b.serverLog != nil {
		fmt.Fprintf(b.serverLog, "=== loadtest: %s on %s\n", name, addr)
		cmd.Stdout = b.serverLog
	} // else os.DevNull: the request log costs the server its write, as in production, and us nothing
	if watch != nil && cmd.Stdout != nil {
		cmd.Stdout = io.MultiWriter(watch, cmd.Stdout)
	} else if watch != nil {
		cmd.Stdout = watch
	}
	setParentDeathSignal(cmd)
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	b.procs = append(b.procs, p)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	p.ready, err = p.waitReady(ctx)
	return p, err
}

// freeLoopbackAddr finds a free port on 127.0.0.1, known before the start
// so that readiness is timed from it.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) base() string { return "http://" + p.addr }

func (p *proc) api() *apiClient { return &apiClient{client: p.client.Client, base: p.base()} }

// exitedErr describes an unexpected exit, with the end of its stderr.
func (p *proc) exitedErr() error {
	return fmt.Errorf("%s exited: %v\n%s", p.name, p.waitErr, indent(p.stderrText()))
}

// waitReady polls /readyz from the process's start and returns how long
// it took.
func (p *proc) waitReady(ctx context.Context) (time.Duration, error) {
	const path, timeout = "/readyz", 60 * time.Second
	client := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	}
	defer client.CloseIdleConnections()
	deadline := p.started.Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base()+path, nil)
		resp, err := client.Do(req)
		var last any = err // shown if the deadline passes
		if err == nil {
			last = resp.Status
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.started), nil
			}
		}
		select {
		case <-p.done:
			return 0, p.exitedErr()
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s: %s did not answer 200 within %v (last: %v)\n%s", p.name, path, timeout, last, indent(p.stderrText()))
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// stop asks the process to shut down gracefully, and kills it after a while.
func (p *proc) stop() error {
	select {
	case <-p.done:
		if p.stopped {
			return nil
		}
		return p.exitedErr()
	default:
	}
	p.stopped = true
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within 10 s of SIGTERM; killed", p.name)
	}
}

// kill ends the process at once; for cleanup after an interruption.
func (p *proc) kill() {
	p.cmd.Process.Kill() // fails only when it has exited already
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// procCPUTime is pid's CPU time so far, all threads, in nanoseconds where
// the kernel keeps them (pgtest.ThreadsCPU). Go's threads live as long as
// the process, so none's time is lost between readings.
func procCPUTime(pid int, name string) (time.Duration, error) {
	d, err := pgtest.ProcessCPU(pid)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// rss is VmRSS from /proc/<pid>/status, in bytes.
func (p *proc) rss() (int64, error) { return p.procStatus("VmRSS") }

// procStatus is a field of /proc/<pid>/status given in kB, in bytes.
func (p *proc) procStatus(field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.name, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s %q: %w", p.name, field, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("%s: no %s in /proc/%d/status", p.name, field, p.pid())
}

// buildServer builds the petstore binary from the module root into dir,
// and says where that root is.
func buildServer(ctx context.Context, dir string) (bin, src string, err error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", "", errors.New("the go command is not on PATH")
	}
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", "", errors.New("run from inside the petstore module (go env GOMOD is empty)")
	}
	src = filepath.Dir(gomod)
	bin, err = buildIn(ctx, src, filepath.Join(dir, "petstore"))
	return bin, src, err
}

func buildIn(ctx context.Context, src, bin string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %v\n%s", src, err, indent(string(out)))
	}
	return bin, nil
}

func isModuleDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// stderrText is the start and the end of the process's stderr: enough to
// say why it failed.
func (p *proc) stderrText() string {
	data, _ := os.ReadFile(p.stderr)
	const keep = 16 << 10
	if len(data) > 2*keep {
		return fmt.Sprintf("%s\n[... %d bytes ...]\n%s", data[:keep], len(data)-2*keep, data[len(data)-keep:])
	}
	return string(data)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
