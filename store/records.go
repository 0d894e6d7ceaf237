package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The records written on every durable POST are encoded and decoded here by
// hand, because encoding/json's reflection was a tenth of a write's CPU in
// the store. The bytes are exactly what encoding/json produces for these
// types (records_test.go checks it), so files written before and after read
// the same, and json.Unmarshal still reads every record.

// appendPetJSON appends p as json.Marshal encodes it.
func appendPetJSON(b []byte, p *Pet) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, p.ID, 10)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, p.Name)
	b = append(b, `,"categoryId":`...)
	b = strconv.AppendInt(b, p.CategoryID, 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(p.Status))
	return append(b, '}')
}

// AppendJSON appends the pet in its API form: the bytes json.Marshal gives,
// at a fraction of the cost, for handlers that answer with a pet.
func (p *Pet) AppendJSON(b []byte) []byte { return appendPetJSON(b, p) }

// AppendJSON appends the order in its API form, as json.Marshal would,
// and fails where it would.
func (o *Order) AppendJSON(b []byte) ([]byte, error) { return appendOrderJSON(b, o) }

// appendInventoryJSON appends it as json.Marshal encodes it.
func appendInventoryJSON(b []byte, it *InventoryItem) []byte {
	b = append(b, `{"petId":`...)
	b = strconv.AppendInt(b, it.PetID, 10)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(it.Quantity), 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(it.Status))
	return append(b, '}')
}

// appendOrderJSON appends o as json.Marshal encodes it. It fails where
// json.Marshal does: on a ship date that RFC 3339 cannot represent.
func appendOrderJSON(b []byte, o *Order) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, o.ID, 10)
	b = append(b, `,"petId":`...)
	b = strconv.AppendInt(b, o.PetID, 10)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(o.Quantity), 10)
	if o.ShipDate != nil {
		b = append(b, `,"shipDate":"`...)
		var err error
		// The same text as time.Time's MarshalJSON, without its allocation;
		// json.Marshal would only re-check that it is a JSON string.
		if b, err = o.ShipDate.AppendText(b); err != nil {
			_, err = json.Marshal(o) // the error json.Marshal gives
			return nil, err
		}
		b = append(b, '"')
	}
	b = append(b, `,"complete":`...)
	b = strconv.AppendBool(b, o.Complete)
	return append(b, '}'), nil
}

const hexDigits = "0123456789abcdef"

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
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
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

// recordReader reads a record in exactly the form the append encoders
// write. Anything else (escaped strings, other spacing or field order, a
// record written by something else) stops it, and the caller then decodes
// with json.Unmarshal: what it accepts, it reads as json.Unmarshal would.
type recordReader struct {
	b  []byte
	ok bool
}

// lit consumes s.
func (r *recordReader) lit(s string) {
	if r.ok && len(r.b) >= len(s) && string(r.b[:len(s)]) == s {
		r.b = r.b[len(s):]
		return
	}
	r.ok = false
}

// int consumes an integer as strconv.AppendInt writes it.
func (r *recordReader) int() int64 {
	if !r.ok {
		return 0
	}
	b := r.b
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	n := 0
	for n < len(b) && n < 19 && '0' <= b[n] && b[n] <= '9' {
		n++
	}
	// No leading zero, and at most 18 digits so that it cannot overflow;
	// longer numbers are left to json.Unmarshal.
	if n == 0 || n == 19 || (b[0] == '0' && n > 1) {
		r.ok = false
		return 0
	}
	var v int64
	for _, c := range b[:n] {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	r.b = b[n:]
	return v
}

// str consumes a quoted string that needs no unescaping: valid UTF-8 with no
// backslash, quote or control character, which json.Unmarshal takes as it
// is.
func (r *recordReader) str() []byte {
	if !r.ok || len(r.b) == 0 || r.b[0] != '"' {
		r.ok = false
		return nil
	}
	end := bytes.IndexByte(r.b[1:], '"') + 1
	if end == 0 {
		r.ok = false
		return nil
	}
	s := r.b[1:end]
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			r.ok = false
			return nil
		}
	}
	if !utf8.Valid(s) {
		r.ok = false
		return nil
	}
	r.b = r.b[end+1:]
	return s
}

// done reports whether the whole record was read.
func (r *recordReader) done() bool {
	return r.ok && len(r.b) == 0
}

// decodePet decodes a stored pet.
func decodePet(id int64, v []byte) (Pet, error) {
	r := recordReader{b: v, ok: true}
	var p Pet
	r.lit(`{"id":`)
	p.ID = r.int()
	r.lit(`,"name":`)
	name := r.str()
	r.lit(`,"categoryId":`)
	p.CategoryID = r.int()
	r.lit(`,"status":`)
	status := r.str()
	r.lit(`}`)
	if r.done() {
		p.Name, p.Status = string(name), petStatus(status)
		return p, nil
	}
	return decodeJSONPet(id, v)
}

// decodeInventory decodes a stored inventory entry.
func decodeInventory(id int64, v []byte) (InventoryItem, error) {
	r := recordReader{b: v, ok: true}
	var it InventoryItem
	r.lit(`{"petId":`)
	it.PetID = r.int()
	r.lit(`,"quantity":`)
	q := r.int()
	r.lit(`,"status":`)
	status := r.str()
	r.lit(`}`)
	if r.done() && int64(int(q)) == q {
		it.Quantity, it.Status = int(q), petStatus(status)
		return it, nil
	}
	return decodeJSONInventory(id, v)
}

// decodeJSONPet is decodePet's slow path, apart so that its value's escape
// to json.Unmarshal does not put the fast path's on the heap too.
func decodeJSONPet(id int64, v []byte) (Pet, error) {
	var p Pet
	err := decodeJSON(id, v, &p)
	return p, err
}

// decodeJSONInventory is decodeInventory's slow path (see decodeJSONPet).
func decodeJSONInventory(id int64, v []byte) (InventoryItem, error) {
	var it InventoryItem
	err := decodeJSON(id, v, &it)
	return it, err
}

// petStatus converts without allocating for the statuses there are.
func petStatus(b []byte) PetStatus {
	switch string(b) {
	case string(StatusAvailable):
		return StatusAvailable
	case string(StatusPending):
		return StatusPending
	case string(StatusSold):
		return StatusSold
	}
	return PetStatus(b)
}
