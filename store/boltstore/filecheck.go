package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
)

// bbolt's file format, as far as checkFile reads it: every page starts with
// a 16-byte header, pages 0 and 1 are meta pages, and a meta page holds, in
// the machine's byte order, magic, version, page size, flags, root bucket
// (page id, sequence), freelist page, high-water page id, transaction id,
// and an FNV-64a checksum of everything before it.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16
	metaSize        = 64
	metaChecksumOff = 56 // within the meta, after the page header
)

type fileMeta struct {
	pageSize uint32
	pgid     uint64 // pages in use: the file must hold at least this many
	txid     uint64
}

// checkFile refuses a data file that bbolt cannot open safely, before bbolt
// maps it: on a cut file, the first touch of a missing page is a SIGBUS
// that kills the process. A missing file is fine (Open creates it); an
// empty one is refused, since starting over it would hide the loss.
func checkFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	if !info.Mode().IsRegular() {
		return fmt.Errorf("data file %s is not a regular file", path)
	}
	if size == 0 {
		return fmt.Errorf("data file %s is empty (0 bytes), not a bbolt file; restore it from a backup, or remove it to start with an empty store", path)
	}
	m0, err0 := readMeta(f, 0)
	if err0 != nil && errors.Is(err0, errNotBolt) {
		return fmt.Errorf("data file %s is not a bbolt file (%v)", path, err0)
	}
	// The second meta page is one page further; its size comes from the
	// first when that one is sound, else it is tried at each size bbolt uses.
	var m1 fileMeta
	err1 := errNotBolt
	if err0 == nil {
		m1, err1 = readMeta(f, int64(m0.pageSize))
	} else {
		for ps := int64(1024); ps <= 64<<10 && ps < size; ps <<= 1 {
			if m1, err1 = readMeta(f, ps); err1 == nil {
				break
			}
		}
	}
	if err0 != nil && err1 != nil {
		return fmt.Errorf("data file %s is damaged: neither meta page is valid (%v; %v)", path, err0, err1)
	}
	meta := m0 // the valid one, else the later transaction's
	if err0 != nil || err1 == nil && m1.txid > m0.txid {
		meta = m1
	}
	// The size again, now that the meta page is read: another process may
	// be running on the file, which grows before its meta page says so.
	if info, err = f.Stat(); err != nil {
		return err
	}
	size = info.Size()
	if need := int64(meta.pgid) * int64(meta.pageSize); size < need {
		return fmt.Errorf("data file %s is truncated: it has %d bytes, its header says %d (%d pages of %d bytes); restore it from a backup",
			path, size, need, meta.pgid, meta.pageSize)
	}
	return nil
}

var errNotBolt = errors.New("no bbolt magic number at the start")

func readMeta(f io.ReaderAt, off int64) (fileMeta, error) {
	var buf [pageHeaderSize + metaSize]byte
	n, err := f.ReadAt(buf[:], off)
	if n < len(buf) {
		if err == nil || err == io.EOF {
			if off == 0 {
				return fileMeta{}, fmt.Errorf("%w: the file is only %d bytes", errNotBolt, n)
			}
			return fileMeta{}, fmt.Errorf("meta page at byte %d is cut off", off)
		}
		return fileMeta{}, err
	}
	m := buf[pageHeaderSize:]
	ne := binary.NativeEndian
	if ne.Uint32(m[0:]) != boltMagic {
		if off == 0 {
			return fileMeta{}, errNotBolt
		}
		return fileMeta{}, fmt.Errorf("meta page at byte %d has no bbolt magic number", off)
	}
	if v := ne.Uint32(m[4:]); v != boltVersion {
		return fileMeta{}, fmt.Errorf("meta page at byte %d has format version %d, this build reads %d", off, v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(m[:metaChecksumOff])
	if h.Sum64() != ne.Uint64(m[metaChecksumOff:]) {
		return fileMeta{}, fmt.Errorf("meta page at byte %d fails its checksum", off)
	}
	meta := fileMeta{pageSize: ne.Uint32(m[8:]), pgid: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}
	if meta.pageSize < 512 || meta.pageSize&(meta.pageSize-1) != 0 {
		return fileMeta{}, fmt.Errorf("meta page at byte %d gives an impossible page size %d", off, meta.pageSize)
	}
	return meta, nil
}
