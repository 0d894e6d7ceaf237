package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
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

// Sign sets the Standard Webhooks headers of a delivery of body, the event
// msgID, at time at: webhook-id, webhook-timestamp and webhook-signature
// ("v1," and the base64 HMAC-SHA256 of "id.timestamp.body").
func Sign(h http.Header, secret, msgID string, at time.Time, body []byte) error {
	key, err := secretKey(secret)
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return nil
}
