package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFirstStartOnABusyPortLosesNoToken: a first start on a port another
// program holds fails in one line that names the flag and another port to
// try, and leaves nothing behind; the next start, on a free port, prints
// the admin token, which then works.
func TestFirstStartOnABusyPortLosesNoToken(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := filepath.Join(t.TempDir(), "petstore.db")

	for _, flag := range []string{"--listen", "--https-listen", "--http-listen"} {
		args := []string{"--listen", "127.0.0.1:0", "--rate-limit", "0", "--data", data}
		if flag == "--listen" {
			args[1] = busy.Addr().String()
		} else {
			args = append(args, flag, busy.Addr().String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out strings.Builder
		err := run(ctx, args, func(string) string { return "" }, &out)
		cancel()
		if err == nil {
			t.Fatalf("%s on a busy port: the start did not fail", flag)
		}
		msg := err.Error()
		_, port, _ := net.SplitHostPort(busy.Addr().String())
		if strings.Contains(msg, "\n") || !strings.Contains(msg, flag+" "+busy.Addr().String()) || !strings.Contains(msg, "in use") || !regexp.MustCompile(flag+` 127\.0\.0\.1:\d+ \(PETSTORE_`).MatchString(msg) || strings.Contains(msg, "127.0.0.1:"+port+" (") {
			t.Errorf("%s on a busy port: %q; want one line naming the flag and another port", flag, msg)
		}
		if strings.Contains(out.String(), "pat_") {
			t.Errorf("%s on a busy port printed a token:\n%s", flag, out.String())
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%s on a busy port left the data file behind (%v)", flag, err)
		}
	}

	in := start(t, nil, "--data", data)
	token := in.printedToken(t)
	if code, body := in.call(t, "GET", "/admin/project", "", "Authorization", "Bearer "+token); code != 200 {
		t.Errorf("the printed token: %d %s", code, body)
	}
	in.stop(t)

	// A start on a busy port once the file exists keeps it, token and all.
	err = run(context.Background(), []string{"--listen", busy.Addr().String(), "--data", data}, func(string) string { return "" }, io.Discard)
	if err == nil {
		t.Fatal("a start on a busy port did not fail")
	}
	again := start(t, nil, "--data", data)
	if strings.Contains(again.out.String(), "pat_") {
		t.Errorf("a later start printed a new token:\n%s", again.out)
	}
	if code, body := again.call(t, "GET", "/admin/project", "", "Authorization", "Bearer "+token); code != 200 {
		t.Errorf("the first token after a failed start: %d %s", code, body)
	}
}
