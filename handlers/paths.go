package handlers

import "strings"

// The operator's trees of paths. Which paths are the operator's is decided
// here alone: the admin token guard, host routing and the wording of 401s
// all ask these functions.
const (
	adminTree     = "/admin"
	metricsTree   = "/metrics"
	dashboardTree = "/dashboard"
)

// tokenPath reports whether a path is the operator's API: the admin API,
// backups and metrics. Every method on it needs the admin token, OPTIONS
// and unknown methods included, so that nothing about it (not even which
// methods exist) is told to someone without the token.
func tokenPath(p string) bool { return inTree(p, adminTree) || inTree(p, metricsTree) }

// operatorPath reports whether a path belongs to the operator (admin API,
// dashboard, metrics): those are never served on customers' domains, nor
// on the cleartext listener.
func operatorPath(p string) bool { return tokenPath(p) || inTree(p, dashboardTree) }

// inTree reports whether path p is root or below it.
func inTree(p, root string) bool {
	return strings.HasPrefix(p, root) && (len(p) == len(root) || p[len(root)] == '/')
}
