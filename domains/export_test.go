package domains

import "context"

// What tests ask of a manager beyond its API.

// CheckDue runs the background checks whose time has come, as Run does on
// its timer.
func (m *Manager) CheckDue(ctx context.Context) { m.checkDue(ctx) }

// TendCertificates runs one round of the certificate loop now.
func (m *Manager) TendCertificates(ctx context.Context) { m.certs.Tend(ctx) }

// CertificateAllowed reports whether name may get a certificate.
func (m *Manager) CertificateAllowed(name string) bool { return m.table.Load().certName(name).Allowed }

// CertificateCover is the served wildcard whose certificate a handshake
// for name gets when name is not served on its own.
func (m *Manager) CertificateCover(name string) string { return m.table.Load().certName(name).Cover }
