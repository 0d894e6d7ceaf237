package events

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// secretPrefix starts a Standard Webhooks secret; the key's base64
// follows.
const secretPrefix = "whsec_"

// NewSecret makes a signing secret: 32 random bytes in whsec_ form.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// signer signs with one secret or more, keys decoded once and HMACs reused
// from the key's saved state rather than hashing the padded key again.
type signer struct {
	macs []*sync.Pool
}

func newSigner(secrets string) (*signer, error) {
	s := &signer{}
	for _, secret := range strings.Fields(secrets) {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
		if err != nil || len(key) == 0 {
			return nil, errors.New("webhooks: the signing secret is not whsec_ and base64")
		}
		s.macs = append(s.macs, &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }})
	}
	if len(s.macs) == 0 {
		return nil, errors.New("webhooks: the webhook has no signing secret")
	}
	return s, nil
}

// Canonical header names, so that setting them in the map skips
// canonicalization.
const (
	hdrID        = "Webhook-Id"
	hdrTimestamp = "Webhook-Timestamp"
	hdrSignature = "Webhook-Signature"
)

func (s *signer) sign(h http.Header, msgID string, at time.Time, body []byte) {
	// One buffer holds "id.timestamp." and then the signature.
	buf := make([]byte, 0, len(msgID)+24+len(s.macs)*(len("v1, ")+base64.StdEncoding.EncodedLen(sha256.Size)))
	buf = append(buf, msgID...)
	buf = append(buf, '.')
	tsStart := len(buf)
	buf = strconv.AppendInt(buf, at.Unix(), 10)
	ts := buf[tsStart:]
	prefix := append(buf, '.')
	sig := s.signature(prefix[len(prefix):], prefix, body)
	vals := []string{msgID, string(ts), string(sig)}
	h[hdrID] = vals[0:1:1]
	h[hdrTimestamp] = vals[1:2:2]
	h[hdrSignature] = vals[2:3:3]
}

// signature appends webhook-signature's value: per secret, "v1," and the
// base64 HMAC-SHA256 of prefix and body, space-separated.
func (s *signer) signature(b, prefix, body []byte) []byte {
	for i, macs := range s.macs {
		if i > 0 {
			b = append(b, ' ')
		}
		mac := macs.Get().(hash.Hash)
		mac.Reset()
		mac.Write(prefix)
		mac.Write(body)
		var sum [sha256.Size]byte
		b = base64.StdEncoding.AppendEncode(append(b, "v1,"...), mac.Sum(sum[:0]))
		macs.Put(mac)
	}
	return b
}
