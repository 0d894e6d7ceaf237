package postgres

import "testing"

// TestMigrationVersions: the embedded migrations have one version each,
// in a row from 1, so that every database applies all of them in order.
func TestMigrationVersions(t *testing.T) {
	files, err := migrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if f.version != i+1 {
			t.Errorf("migration %s has version %d, want %d", f.name, f.version, i+1)
		}
	}
}
