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

// pageStart is what the start of a page (templates/page-start.html) says
// of it: its title, the name of its stylesheet and script without the
// extension, the text of its skip link, and its referrer policy if any.
type pageStart struct{ Title, Assets, Skip, Referrer string }

func newPageStart(title, assets, skip, referrer string) pageStart {
	return pageStart{Title: title, Assets: assets, Skip: skip, Referrer: referrer}
}

// secretOnce is what the dashboard's panel for a secret shown once
// (templates/dashboard.html) says: its id, heading, note and the label of
// the secret's field.
type secretOnce struct{ ID, Title, Note, Label string }

func newSecretOnce(id, title, note, label string) secretOnce {
	return secretOnce{ID: id, Title: title, Note: note, Label: label}
}

// listTable is what a list of the dashboard says: its table's id and
// caption, the note shown when it is empty, and its column headings.
type listTable struct {
	ID, Caption, Empty string
	Columns            []string
}

func newListTable(id, caption, empty string, columns ...string) listTable {
	return listTable{ID: id, Caption: caption, Empty: empty, Columns: columns}
}

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

// pathBreaks writes an API path with a line-break opportunity before each
// "/" but the first, so that a narrow column wraps it between segments
// (/categories, then /{categoryId} on the next line) and never inside one;
// the CSS keeps the segments whole.
func pathBreaks(path string) template.HTML {
	var b strings.Builder
	for i, segment := range strings.Split(path, "/") {
		if i > 1 {
			b.WriteString("<wbr>")
		}
		if i > 0 {
			b.WriteString("/")
		}
		b.WriteString(template.HTMLEscapeString(segment))
	}
	return template.HTML(b.String())
}

// textareaRows sizes a body field to its example, within reason.
func textareaRows(s string) int {
	n := strings.Count(s, "\n") + 2
	return min(max(n, 4), 16)
}

// execute renders a page.
func execute(t *template.Template, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
