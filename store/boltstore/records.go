package boltstore

import (
	"bytes"
	"unicode/utf8"

	"petstore/store"
)

// recordReader reads a record in exactly the form store/records.go writes.
// Anything else stops it, and the caller then decodes with json.Unmarshal.
type recordReader struct {
	b  []byte
	ok bool
}

func (r *recordReader) lit(s string) {
	if r.ok && len(r.b) >= len(s) && string(r.b[:len(s)]) == s {
		r.b = r.b[len(s):]
		return
	}
	r.ok = false
}

// int consumes key, then an integer as strconv.AppendInt writes it.
func (r *recordReader) int(key string) int64 {
	r.lit(key)
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

// str consumes key, then a quoted string that needs no unescaping: valid
// UTF-8 with no backslash, quote or control character, which
// json.Unmarshal takes as it is.
func (r *recordReader) str(key string) []byte {
	r.lit(key)
	if r.ok && len(r.b) > 0 && r.b[0] == '"' {
		if end := bytes.IndexByte(r.b[1:], '"') + 1; end > 0 && plainString(r.b[1:end]) {
			s := r.b[1:end]
			r.b = r.b[end+1:]
			return s
		}
	}
	r.ok = false
	return nil
}

func plainString(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return utf8.Valid(s)
}

// end consumes the record's closing brace and reports whether the whole
// record was read.
func (r *recordReader) end() bool {
	r.lit(`}`)
	return r.ok && len(r.b) == 0
}

func decodePet(id int64, v []byte) (store.Pet, error) {
	r := recordReader{b: v, ok: true}
	petID := r.int(`{"id":`)
	name := r.str(`,"name":`)
	categoryID := r.int(`,"categoryId":`)
	status := r.str(`,"status":`)
	if r.end() {
		return store.Pet{ID: petID, Name: string(name), CategoryID: categoryID, Status: petStatus(status)}, nil
	}
	return decodeJSONRecord[store.Pet](id, v)
}

func decodeInventory(id int64, v []byte) (store.InventoryItem, error) {
	r := recordReader{b: v, ok: true}
	petID := r.int(`{"petId":`)
	quantity := r.int(`,"quantity":`)
	status := r.str(`,"status":`)
	if r.end() && int64(int(quantity)) == quantity {
		return store.InventoryItem{PetID: petID, Quantity: int(quantity), Status: petStatus(status)}, nil
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
