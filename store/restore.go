package store

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// What survives a store that goes back in time (a restored dump or
// backup): each instance keeps, outside the store, the highest id it knows
// was given out per resource and the keys it knows were revoked (Marks). A
// store found older than that raises its counters above the marks, revokes
// those keys again, and records one store.restored event.

// The resources whose ids a rewind must not give out again, as Marks and
// store.restored name them.
const (
	ResCategories = "categories"
	ResPets       = "pets"
	ResOrders     = "orders"
	ResAPIKeys    = "apiKeys"
	ResWebhooks   = "webhooks"
	ResDeliveries = "deliveries"
	ResDeploys    = "deploys"
)

// Resources lists them in the order store.restored shows them.
var Resources = []string{ResCategories, ResPets, ResOrders, ResAPIKeys, ResWebhooks, ResDeliveries, ResDeploys}

// Revocation is an API key revoked, by the SHA-256 of its secret.
type Revocation struct {
	SHA256    HexBytes  `json:"sha256"`
	KeyID     int64     `json:"keyId"`
	RevokedAt time.Time `json:"revokedAt"`
}

// HexBytes is bytes written as hexadecimal in JSON.
type HexBytes []byte

func (h HexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

func (h *HexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := hex.DecodeString(s)
	*h = d
	return err
}

// Marks are what an instance knows was acknowledged: the highest id given
// out per resource, and the revocations. One writer (the store that owns
// them) changes them; Save writes them to their file.
type Marks struct {
	mu    sync.Mutex
	path  string
	saved bool
	// id is the store's own identity, which a dump carries wherever it is
	// restored; others is the one the marks need, being of another name.
	id, others string
	horizon    int64
	lastIDs    map[string]int64
	revoked    map[[32]byte]Revocation
	// steps is the largest rise of each counter between two observations,
	// kept across restarts; observed the last observation of this process.
	steps, observed map[string]int64
}

// marksFile is the file's form.
type marksFile struct {
	// Horizon is the store's counter of transactions as last seen, which
	// a restore does not undo.
	Horizon int64 `json:"horizon,omitempty"`
	// Store names the store the marks are of, so that a file meant for
	// another is refused.
	Store string `json:"store"`
	// ID is the store's identity (SetID).
	ID      string           `json:"id,omitempty"`
	LastIDs map[string]int64 `json:"lastIds"`
	Steps   map[string]int64 `json:"steps,omitempty"`
	Revoked []Revocation     `json:"revoked"`
}

// LoadMarks reads the marks of the store named name from path; a missing
// file is empty marks, and "" keeps them in memory only.
func LoadMarks(path, name string) (*Marks, error) {
	m := &Marks{path: path, saved: true, lastIDs: map[string]int64{}, revoked: map[[32]byte]Revocation{}, steps: map[string]int64{}, observed: map[string]int64{}}
	if path == "" {
		return m, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the restore marks %s: %w", path, err)
	}
	var f marksFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("the restore marks %s are not JSON as petstore writes it (%v): remove the file to start over, which forgets the revocations it holds", path, err)
	}
	m.id = f.ID
	if f.Store != name && f.ID != "" {
		m.others, m.saved = f.ID, false // checked by SetID, then saved under name
	} else if f.Store != name {
		return nil, fmt.Errorf("the restore marks %s are of %q, not of %q: give each store its own file (--restore-marks)", path, f.Store, name)
	}
	maps.Copy(m.lastIDs, f.LastIDs)
	maps.Copy(m.steps, f.Steps)
	m.horizon = f.Horizon
	for _, r := range f.Revoked {
		if len(r.SHA256) == 32 {
			m.revoked[[32]byte(r.SHA256)] = r
		}
	}
	return m, nil
}

// ErrOtherStore is SetID's refusal, which no retry changes.
var ErrOtherStore = errors.New("not a restore or copy of the database the marks are of")

// SetID gives the marks the identity their store reads from itself. Marks
// of another name (a dump restored into another database, a database moved
// to another host) are of this store only if its identity is theirs.
func (m *Marks) SetID(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.others != "" && m.others != id {
		return fmt.Errorf("the restore marks %s are of another database (identity %s, this one's is %s): give each store its own file (--restore-marks): %w", m.path, m.others, id, ErrOtherStore)
	}
	m.saved = m.saved && m.id == id
	m.id, m.others = id, ""
	return nil
}

// Path is the file the marks are saved to ("" for none).
func (m *Marks) Path() string { return m.path }

// Acked raises the mark of resource res to id.
func (m *Marks) Acked(res string, id int64) {
	m.mu.Lock()
	if id > m.lastIDs[res] {
		m.lastIDs[res] = id
		m.saved = false
	}
	m.mu.Unlock()
}

// Observe raises the mark of res to v, its counter as the store read it,
// and keeps the largest rise between two observations.
func (m *Marks) Observe(res string, v int64) {
	m.mu.Lock()
	if prev, ok := m.observed[res]; ok && v-prev > m.steps[res] {
		m.steps[res], m.saved = v-prev, false
	}
	m.observed[res] = v
	m.mu.Unlock()
	m.Acked(res, v)
}

// Rewound forgets the observations, so that a rewind's own raise of the
// counters is no rise (nor the next rewind's headroom).
func (m *Marks) Rewound() {
	m.mu.Lock()
	clear(m.observed)
	m.mu.Unlock()
}

// Headroom is how far past the mark of res a rewind moves its counter:
// past what was given out since the marks were last saved (up to a crash)
// at twice the fastest pace seen, and at least RewindHeadroom.
func (m *Marks) Headroom(res string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(RewindHeadroom, 2*m.steps[res])
}

// SetHorizon keeps the store's transaction counter as last seen.
func (m *Marks) SetHorizon(h int64) {
	m.mu.Lock()
	if h != m.horizon {
		m.horizon = h
		m.saved = false
	}
	m.mu.Unlock()
}

// Horizon is the store's transaction counter as last seen (0: never).
func (m *Marks) Horizon() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.horizon
}

func (m *Marks) Mark(res string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastIDs[res]
}

// LastIDs is a copy of the marks of ids.
func (m *Marks) LastIDs() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.lastIDs)
}

// Revoke keeps a revocation; it reports whether it was new.
func (m *Marks) Revoke(r Revocation) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := [32]byte(r.SHA256)
	if _, ok := m.revoked[h]; ok {
		return false
	}
	m.revoked[h] = r
	m.saved = false
	return true
}

// Pardon forgets the revocation of a key's secret hash when the pardon
// (at) came after it, and reports whether it forgot.
func (m *Marks) Pardon(hash [32]byte, at time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.revoked[hash]; !ok || at.Before(r.RevokedAt) {
		return false
	}
	delete(m.revoked, hash)
	m.saved = false
	return true
}

// PardonKeys forgets the revocations of the keys with these ids, and
// returns how many it forgot.
func (m *Marks) PardonKeys(ids []int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for h, r := range m.revoked {
		if slices.Contains(ids, r.KeyID) {
			delete(m.revoked, h)
			n++
		}
	}
	if n > 0 {
		m.saved = false
	}
	return n
}

// Revoked reports whether the secret hash is of a revoked key.
func (m *Marks) Revoked(hash [32]byte) bool {
	m.mu.Lock()
	_, ok := m.revoked[hash]
	m.mu.Unlock()
	return ok
}

// Revocations lists the revocations, in key id order.
func (m *Marks) Revocations() []Revocation {
	m.mu.Lock()
	out := slices.Collect(maps.Values(m.revoked))
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Revocation) int { return int(a.KeyID - b.KeyID) })
	return out
}

// Save writes the marks to their file, when they changed or the file is
// gone (removed while the store runs), so that a crash leaves the old marks
// or the new ones.
func (m *Marks) Save(name string) error {
	m.mu.Lock()
	if m.path == "" || m.saved && !missing(m.path) {
		m.mu.Unlock()
		return nil
	}
	f := marksFile{Horizon: m.horizon, Store: name, ID: m.id, LastIDs: maps.Clone(m.lastIDs), Steps: maps.Clone(m.steps), Revoked: slices.Collect(maps.Values(m.revoked))}
	m.saved = true
	m.mu.Unlock()
	slices.SortFunc(f.Revoked, func(a, b Revocation) int { return int(a.KeyID - b.KeyID) })
	data, err := json.MarshalIndent(f, "", "  ")
	if err == nil {
		err = writeFileAtomic(m.path, append(data, '\n'))
	}
	if err != nil {
		m.mu.Lock()
		m.saved = false
		m.mu.Unlock()
		return fmt.Errorf("saving the restore marks %s: %w", m.path, err)
	}
	return nil
}

func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if err := cmp.Or(err, tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// RewindHeadroom is the least a rewind moves each counter past the marks.
const RewindHeadroom = 1000

// RolledBack is what a rewind took away of one resource's ids: those after
// Restored up to Acknowledged; new ones come after ResumesAfter.
type RolledBack struct {
	Restored     int64 `json:"restored"`
	Acknowledged int64 `json:"acknowledged"`
	ResumesAfter int64 `json:"resumesAfter"`
}

// Restored is the data of store.restored.
type Restored struct {
	// Store is "postgres" or "bbolt".
	Store string `json:"store"`
	// RestoredTo is the newest event the restored store holds from before
	// it went back: every event after it that a consumer received before
	// this one was rolled back.
	RestoredTo     string                `json:"restoredTo,omitempty"`
	RestoredToTime *time.Time            `json:"restoredToTime,omitempty"`
	IDs            map[string]RolledBack `json:"ids"`
	RevokedAgain   int                   `json:"revokedAgain"`
}

// RolledBackIDs compares the store's last ids, as restored, with the
// marks: what was rolled back, resuming headroom[res] above the marks.
func RolledBackIDs(restored, marks, headroom map[string]int64) map[string]RolledBack {
	out := map[string]RolledBack{}
	for _, res := range Resources {
		if marks[res] > restored[res] {
			out[res] = RolledBack{Restored: restored[res], Acknowledged: marks[res], ResumesAfter: marks[res] + headroom[res]}
		}
	}
	return out
}
