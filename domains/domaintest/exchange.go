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

// Exchange writes a raw request on c and reads one answer within 10 s: its
// status and body, 0 when c closed without one, -1 when time ran out.
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

// ErrNoAnswer: the connection failed or closed before the whole body.
var ErrNoAnswer = errors.New("no answer")

// DoJSON sends req with c and returns the status once the whole answer is
// read (only then is it an acknowledgement), decoding a 2xx body into out
// when not nil. An incomplete answer is an error wrapping ErrNoAnswer.
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
