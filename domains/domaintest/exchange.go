package domaintest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// Exchange writes a raw request on c and reads one answer within 10
// seconds: its status and body, status 0 when c was closed without an
// answer, or -1 when the time ran out with c still open.
func Exchange(c net.Conn, raw string) (status int, body string) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return 0, ""
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return -1, ""
	}
	if err != nil {
		return 0, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// ErrNoAnswer is a request that got no complete answer: the connection
// failed or closed before the whole body was read.
var ErrNoAnswer = errors.New("no answer")

// DoJSON sends req with c and returns the status once the whole answer is
// read, as only then is a status an acknowledgement; a 2xx body is decoded
// into out when out is not nil. An answer that did not come whole is an
// error wrapping ErrNoAnswer.
func DoJSON(c *http.Client, req *http.Request, out any) (int, error) {
	res, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoAnswer, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoAnswer, err)
	}
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			return res.StatusCode, fmt.Errorf("%s %s: decoding %q: %w", req.Method, req.URL.Path, data, err)
		}
	}
	return res.StatusCode, nil
}
