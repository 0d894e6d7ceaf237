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

// secretPrefix marks a Standard Webhooks signing secret; base64 of the key
// follows it.
const secretPrefix = "whsec_"

// NewSecret makes a signing secret: 32 random bytes, in Standard Webhooks'
// whsec_ form.
func NewSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// secretKey is the HMAC key of a whsec_ secret.
func secretKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || len(key) == 0 {
		return nil, errors.New("webhooks: the signing secret is not whsec_ and base64")
	}
	return key, nil
}

// signer signs with one secret or more. Their keys are decoded once, and
// their HMACs are reused: after the first, an HMAC starts from the key's
// saved state instead of hashing the padded key again.
type signer struct {
	macs []*sync.Pool
}

func newSigner(secrets string) (*signer, error) {
	s := &signer{}
	for _, secret := range strings.Fields(secrets) {
		key, err := secretKey(secret)
		if err != nil {
			return nil, err
		}
		s.macs = append(s.macs, &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }})
	}
	if len(s.macs) == 0 {
		return nil, errors.New("webhooks: the webhook has no signing secret")
	}
	return s, nil
}

// Canonical names of the headers of a delivery: set in the map as they
// are, they are not canonicalized on every request.
const (
	hdrID        = "Webhook-Id"
	hdrTimestamp = "Webhook-Timestamp"
	hdrSignature = "Webhook-Signature"
)

func (s *signer) sign(h http.Header, msgID string, at time.Time, body []byte) {
	var buf [20]byte
	ts := strconv.AppendInt(buf[:0], at.Unix(), 10)
	h[hdrID] = []string{msgID}
	h[hdrTimestamp] = []string{string(ts)}
	h[hdrSignature] = []string{string(s.signature(nil, msgID, ts, body))}
}

// signature appends webhook-signature's value: for each secret, "v1," and
// the base64 HMAC-SHA256 of "id.timestamp.body", space-separated.
func (s *signer) signature(b []byte, msgID string, ts, body []byte) []byte {
	for i, macs := range s.macs {
		if i > 0 {
			b = append(b, ' ')
		}
		mac := macs.Get().(hash.Hash)
		mac.Reset()
		mac.Write([]byte(msgID))
		mac.Write([]byte{'.'})
		mac.Write(ts)
		mac.Write([]byte{'.'})
		mac.Write(body)
		var sum [sha256.Size]byte
		b = base64.StdEncoding.AppendEncode(append(b, "v1,"...), mac.Sum(sum[:0]))
		macs.Put(mac)
	}
	return b
}
