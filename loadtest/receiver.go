// The webhook row's receiver: what a cheap real receiver does, and no more.

package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// receiver is the webhook row's own HTTP/1.1 server: it reads each
// request, verifies its signature, notes the webhook-id and answers 204,
// batching answers of requests that came together. It costs the shared
// cores what a lean production receiver would, where net/http costs more.
type receiver struct {
	ln  net.Listener
	key atomic.Pointer[[]byte] // the webhook's HMAC key, once it is created

	received atomic.Int64 // deliveries, duplicates included
	failures atomic.Int64 // requests refused: unreadable, or a bad signature
	mu       sync.Mutex
	seen     map[string]struct{} // webhook-ids
	lastNew  time.Time           // when the last id not seen before came
	firstErr string
}

func newReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{ln: ln, seen: map[string]struct{}{}}
	go r.serve()
	return r, nil
}

func (r *receiver) url() string { return "http://" + r.ln.Addr().String() + "/hook" }

func (r *receiver) close() { r.ln.Close() }

func (r *receiver) setSecret(secret string) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("the webhook's secret: %w", err)
	}
	r.key.Store(&key)
	return nil
}

func (r *receiver) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.seen[id]
	return ok
}

// distinct is the number of events delivered and when the last came.
func (r *receiver) distinct() (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen), r.lastNew
}

func (r *receiver) fail(err error) {
	r.failures.Add(1)
	r.mu.Lock()
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
	r.mu.Unlock()
}

func (r *receiver) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.conn(c)
	}
}

var (
	answerNoContent = []byte("HTTP/1.1 204 No Content\r\n\r\n")
	answerBad       = []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
)

// request is what the receiver keeps of one request, in the connection's
// reused buffers.
type request struct {
	id, timestamp, signature []byte
	length                   int
	body                     []byte
}

func (r *receiver) conn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	var (
		req request
		out []byte
		mac hash.Hash
		sum []byte
	)
	for {
		if err := readRequest(br, &req); err != nil {
			if !errors.Is(err, io.EOF) {
				r.fail(err)
				c.Write(answerBad)
			}
			return
		}
		if mac == nil {
			key := r.key.Load()
			if key == nil {
				r.fail(errors.New("a delivery before the webhook's secret was known"))
				c.Write(answerBad)
				return
			}
			mac = hmac.New(sha256.New, *key)
		}
		mac.Reset()
		mac.Write(req.id)
		mac.Write([]byte{'.'})
		mac.Write(req.timestamp)
		mac.Write([]byte{'.'})
		mac.Write(req.body)
		sum = mac.Sum(sum[:0])
		if !signatureMatches(req.signature, sum) {
			r.fail(fmt.Errorf("webhook-id %s: the signature does not match", req.id))
			c.Write(answerBad)
			return
		}
		r.received.Add(1)
		r.mu.Lock()
		if _, ok := r.seen[string(req.id)]; !ok {
			r.seen[string(req.id)] = struct{}{}
			r.lastNew = time.Now()
		}
		r.mu.Unlock()
		out = append(out, answerNoContent...)
		if br.Buffered() == 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
			out = out[:0]
		}
	}
}

// signatureMatches reports whether one of the space-separated
// "v1,<base64>" signatures is sum.
func signatureMatches(header, sum []byte) bool {
	var want [64]byte
	enc := base64.StdEncoding.AppendEncode(want[:0], sum)
	for sig := range bytes.FieldsSeq(header) {
		if v, ok := bytes.CutPrefix(sig, []byte("v1,")); ok && hmac.Equal(v, enc) {
			return true
		}
	}
	return false
}

func readRequest(br *bufio.Reader, req *request) error {
	req.id, req.timestamp, req.signature = req.id[:0], req.timestamp[:0], req.signature[:0]
	req.length = -1
	line, err := br.ReadSlice('\n')
	if err != nil {
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("reading a request line: %w", err)
	}
	if !bytes.HasPrefix(line, []byte("POST ")) {
		return fmt.Errorf("not a POST: %q", line)
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading a header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return fmt.Errorf("a header without a colon: %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			if req.length, err = strconv.Atoi(string(value)); err != nil || req.length < 0 {
				return fmt.Errorf("Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			return fmt.Errorf("Transfer-Encoding %q: a delivery's body has a known length", value)
		case bytes.EqualFold(name, []byte("webhook-id")):
			req.id = append(req.id, value...)
		case bytes.EqualFold(name, []byte("webhook-timestamp")):
			req.timestamp = append(req.timestamp, value...)
		case bytes.EqualFold(name, []byte("webhook-signature")):
			req.signature = append(req.signature, value...)
		}
	}
	if req.length < 0 || len(req.id) == 0 || len(req.timestamp) == 0 || len(req.signature) == 0 {
		return errors.New("a request without Content-Length, webhook-id, webhook-timestamp or webhook-signature")
	}
	if cap(req.body) < req.length {
		req.body = make([]byte, req.length)
	}
	req.body = req.body[:req.length]
	if _, err := io.ReadFull(br, req.body); err != nil {
		return fmt.Errorf("reading a body: %w", err)
	}
	return nil
}
