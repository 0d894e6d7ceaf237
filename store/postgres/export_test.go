package postgres

// HoldCatchUp keeps db from catching up with other instances' changes
// until release is called: a test can then make several changes "before
// the next poll" for certain.
func HoldCatchUp(db *DB) (release func()) {
	db.cache.catching.Lock()
	return db.cache.catching.Unlock
}
