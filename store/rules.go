package store

// The rules every implementation of the store keeps the same way, exported
// for the PostgreSQL store (store/postgres).

// Secret prefixes: a leaked secret says what it is.
const (
	AdminTokenPrefix = adminTokenPrefix
	APIKeyPrefix     = apiKeyPrefix
)

// NewSecret returns prefix followed by 256 random bits in unpadded base64url.
func NewSecret(prefix string) (string, error) { return newSecret(prefix) }

// DefaultProject is the project of an instance whose settings were never saved.
func DefaultProject() Project { return defaultProject() }

// ValidateProject guards what other parts rely on: the plan, the name, the slug.
func ValidateProject(p *Project) error { return validateProject(p) }
