package domaintest

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// DamagePages damages every leaf page of the bbolt file at path holding
// needle, as a bad sector would: it overwrites the page's type, so bbolt
// panics on its next visit. It works on a file a store has open (bbolt maps
// it shared) and returns the pages damaged, failing the test when none.
func DamagePages(tb testing.TB, path string, needle []byte) int {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	// The first meta page: header (16 bytes), magic and version (4 each),
	// then the page size.
	if len(data) < 28 {
		tb.Fatalf("%s: too short for a bbolt file", path)
	}
	pageSize := int(binary.LittleEndian.Uint32(data[24:28]))
	if pageSize < 1024 || pageSize > 1<<16 {
		tb.Fatalf("%s: page size %d", path, pageSize)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	const leafFlag = 0x02
	n := 0
	for off := 2 * pageSize; off+pageSize <= len(data); off += pageSize {
		page := data[off : off+pageSize]
		if binary.LittleEndian.Uint16(page[8:10]) != leafFlag || !bytes.Contains(page, needle) {
			continue
		}
		if _, err := f.WriteAt([]byte{0x00, 0x00}, int64(off+8)); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	if n == 0 {
		tb.Fatalf("%s: no leaf page holds %q", path, needle)
	}
	return n
}
