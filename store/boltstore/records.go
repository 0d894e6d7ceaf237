package boltstore

import (
	"bytes"
	"unicode/utf8"

	"petstore/store"
)

// recordReader reads a record in exactly the form the append encoders of
// store/records.go write. Anything else (escaped strings, other spacing or field order, a
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
func decodePet(id int64, v []byte) (store.Pet, error) {
	r := recordReader{b: v, ok: true}
	var p store.Pet
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
	return decodeJSONRecord[store.Pet](id, v)
}

// decodeInventory decodes a stored inventory entry.
func decodeInventory(id int64, v []byte) (store.InventoryItem, error) {
	r := recordReader{b: v, ok: true}
	var it store.InventoryItem
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
	return decodeJSONRecord[store.InventoryItem](id, v)
}

// petStatus converts without allocating for the statuses there are.
func petStatus(b []byte) store.PetStatus {
	switch string(b) {
	case string(store.StatusAvailable):
		return store.StatusAvailable
	case string(store.StatusPending):
		return store.StatusPending
	case string(store.StatusSold):
		return store.StatusSold
	}
	return store.PetStatus(b)
}
