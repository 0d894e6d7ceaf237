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
		"pageStart":      newPageStart,
		"lower":          strings.ToLower,
		"stabilityTitle": stabilityTitle,
		"rows":           textareaRows,
		"pathBreaks":     pathBreaks,
	}).ParseFS(templates, "templates/reference.html", "templates/page-start.html"))

	dashboardTemplate = template.Must(template.New("dashboard.html").Funcs(template.FuncMap{
		"asset":      dashboardAssets.url,
		"pageStart":  newPageStart,
		"secretOnce": newSecretOnce,
		"listTable":  newListTable,
	}).ParseFS(templates, "templates/dashboard.html", "templates/page-start.html"))
)

// pageStart is what templates/page-start.html says of a page: title,
// asset name without extension, skip link text, referrer policy.
type pageStart struct{ Title, Assets, Skip, Referrer string }

func newPageStart(title, assets, skip, referrer string) pageStart {
	return pageStart{Title: title, Assets: assets, Skip: skip, Referrer: referrer}
}

// secretOnce is the dashboard's panel for a secret shown once: id,
// heading, note and field label.
type secretOnce struct{ ID, Title, Note, Label string }

func newSecretOnce(id, title, note, label string) secretOnce {
	return secretOnce{ID: id, Title: title, Note: note, Label: label}
}

// listTable is a dashboard list: table id and caption, the empty note,
// column headings.
type listTable struct {
	ID, Caption, Empty string
	Columns            []string
}

func newListTable(id, caption, empty string, columns ...string) listTable {
	return listTable{ID: id, Caption: caption, Empty: empty, Columns: columns}
}

// stabilityTitle says what an x-stability value promises, in the
// document's Versioning words.
func stabilityTitle(s string) string {
	switch s {
	case "beta":
		return "Beta: complete, but its details may still change."
	case "experimental":
		return "Experimental: may change or go away without notice."
	}
	return "Stability: " + s + "."
}

// pathBreaks lets an API path wrap only between segments, with a break
// opportunity before each "/" but the first.
func pathBreaks(path string) template.HTML {
	escaped := template.HTMLEscapeString(path) // which leaves "/" as it is
	first := strings.Index(escaped, "/") + 1
	return template.HTML(escaped[:first] + strings.ReplaceAll(escaped[first:], "/", "<wbr>/"))
}

// textareaRows sizes a body field to its example, within reason.
func textareaRows(s string) int {
	n := strings.Count(s, "\n") + 2
	return min(max(n, 4), 16)
}

func execute(t *template.Template, data any) ([]byte, error) {
	var buf bytes.Buffer
	err := t.Execute(&buf, data)
	return buf.Bytes(), err
}
