package web

import (
	"bytes"
	"embed"
	"html/template"
	"strings"
)

//go:embed templates
var templates embed.FS

var (
	referenceTemplate = template.Must(template.New("reference.html").Funcs(template.FuncMap{
		"asset":          siteAssets.url,
		"lower":          strings.ToLower,
		"stabilityTitle": stabilityTitle,
		"rows":           textareaRows,
	}).ParseFS(templates, "templates/reference.html", "templates/page-start.html"))

	dashboardTemplate = template.Must(template.New("dashboard.html").Funcs(template.FuncMap{
		"asset": dashboardAssets.url,
	}).ParseFS(templates, "templates/dashboard.html", "templates/page-start.html"))
)

// stabilityTitle says what an x-stability value promises, in the words of
// the document's Versioning section.
func stabilityTitle(s string) string {
	switch s {
	case "beta":
		return "Beta: complete, but its details may still change."
	case "experimental":
		return "Experimental: may change or go away without notice."
	}
	return "Stability: " + s + "."
}

// textareaRows sizes a body field to its example, within reason.
func textareaRows(s string) int {
	n := strings.Count(s, "\n") + 2
	return min(max(n, 4), 16)
}

// renderDashboard renders the dashboard page. It is static: everything
// about the project comes from the admin API at run time, after sign-in.
func renderDashboard() ([]byte, error) {
	var buf bytes.Buffer
	if err := dashboardTemplate.Execute(&buf, nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
