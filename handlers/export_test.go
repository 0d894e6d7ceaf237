package handlers

import "context"

// NewWithoutValidation builds a server whose routes skip request
// validation, for the benchmark that measures what validation costs.
func NewWithoutValidation(cfg Config) (*Server, error) { return newServer(cfg, false) }

// Routes lists the registered routes as "METHOD /path" in Echo's form, for
// the tests that compare them with the spec.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.echo.Routes() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// RefreshDomains reloads the domains' routing table from the store, for
// tests that change domains in the store directly.
func (s *Server) RefreshDomains(ctx context.Context) error { return s.domains.Refresh(ctx) }
