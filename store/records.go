package store

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// The records written on every durable POST are encoded here by hand
// (decoded in boltstore/records.go): encoding/json's reflection was a
// visible share of a write's CPU. The bytes are exactly encoding/json's
// (boltstore/records_test.go checks it), so json.Unmarshal reads them all.

// AppendJSON appends the pet in its API form, as json.Marshal would.
func (p *Pet) AppendJSON(b []byte) []byte {
	b = appendInt(b, `{"id":`, p.ID)
	b = appendString(b, `,"name":`, p.Name)
	b = appendInt(b, `,"categoryId":`, p.CategoryID)
	b = appendString(b, `,"status":`, string(p.Status))
	return append(b, '}')
}

// AppendJSON appends the inventory entry in its API form, as json.Marshal would.
func (it *InventoryItem) AppendJSON(b []byte) []byte {
	b = appendInt(b, `{"petId":`, it.PetID)
	b = appendInt(b, `,"quantity":`, int64(it.Quantity))
	b = appendString(b, `,"status":`, string(it.Status))
	return append(b, '}')
}

// AppendJSON appends the order in its API form, as json.Marshal would. It
// fails where json.Marshal does: on a ship date that RFC 3339 cannot
// represent.
func (o *Order) AppendJSON(b []byte) ([]byte, error) {
	b = appendInt(b, `{"id":`, o.ID)
	b = appendInt(b, `,"petId":`, o.PetID)
	b = appendInt(b, `,"quantity":`, int64(o.Quantity))
	ok := true
	if o.ShipDate != nil {
		b, ok = appendJSONTime(b, `,"shipDate":`, o.ShipDate, ok)
	}
	b = strconv.AppendBool(append(b, `,"complete":`...), o.Complete)
	if !ok {
		_, err := json.Marshal(o) // the error json.Marshal gives
		return nil, err
	}
	return append(b, '}'), nil
}

const hexDigits = "0123456789abcdef"

// shortEscapes are encoding/json's two-character escapes of control characters.
var shortEscapes = [0x20]byte{'\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

func appendInt(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(b, name...), v, 10)
}

func appendString(b []byte, name, s string) []byte {
	return appendJSONString(append(b, name...), s)
}

// appendJSONString appends s quoted as encoding/json quotes a string by
// default: <, > and & escaped for HTML, U+2028 and U+2029 escaped, invalid
// UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 && shortEscapes[c] != 0:
				b = append(b, '\\', shortEscapes[c])
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSON appends the delivery in its API form, as json.Marshal would.
// It fails where json.Marshal does: on a time that RFC 3339 cannot
// represent.
func (d *Delivery) AppendJSON(b []byte) ([]byte, error) {
	b = appendInt(b, `{"id":`, d.ID)
	b = appendInt(b, `,"webhookId":`, d.WebhookID)
	b = appendString(b, `,"eventType":`, d.EventType)
	b = appendInt(b, `,"attempt":`, int64(d.Attempt))
	if d.Manual {
		b = append(b, `,"manual":true`...)
	}
	b = appendString(b, `,"state":`, d.State)
	ok := true
	b, ok = appendJSONTime(b, `,"scheduledAt":`, &d.ScheduledAt, ok)
	if d.AttemptedAt != nil {
		b, ok = appendJSONTime(b, `,"attemptedAt":`, d.AttemptedAt, ok)
	}
	if d.Status != 0 {
		b = appendInt(b, `,"status":`, int64(d.Status))
	}
	if d.Error != "" {
		b = appendString(b, `,"error":`, d.Error)
	}
	if d.DurationMS != 0 {
		b = appendInt(b, `,"durationMs":`, d.DurationMS)
	}
	if d.Response != "" {
		b = appendString(b, `,"response":`, d.Response)
	}
	if d.NextAttemptAt != nil {
		b, ok = appendJSONTime(b, `,"nextAttemptAt":`, d.NextAttemptAt, ok)
	}
	if !ok {
		_, err := json.Marshal(d) // the error json.Marshal gives
		return nil, err
	}
	return append(b, '}'), nil
}

// appendJSONTime appends name and t as time.Time's MarshalJSON writes it;
// ok turns false (and stays so) when t cannot be written.
func appendJSONTime(b []byte, name string, t *time.Time, ok bool) ([]byte, bool) {
	b = append(append(b, name...), '"')
	b, err := t.AppendText(b)
	return append(b, '"'), ok && err == nil
}
