package handlers

import (
	"bytes"
	"html/template"
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"
)

// siteOperation is one operation as the reference page lists it.
type siteOperation struct {
	ID, Method, Path, Summary, Stability, Sunset string
	Deprecated                                   bool
}

type siteTag struct {
	Name, Description string
	Operations        []siteOperation
}

var siteTemplate = template.Must(template.New("site").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} API reference</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
code{font-size:.95em}.m{display:inline-block;min-width:4.5em;font-weight:700}.b{font-size:.75em;padding:0 .4em;border-radius:.3em;background:#fde68a}
.d{text-decoration:line-through}</style></head>
<body><h1>{{.Title}} <small>{{.Version}}</small></h1>
<p>The machine-readable spec: <a href="/openapi.yaml">openapi.yaml</a> · <a href="/openapi.json">openapi.json</a></p>
{{range .Tags}}<h2>{{.Name}}</h2><p>{{.Description}}</p><ul>
{{range .Operations}}<li id="{{.ID}}"><span class="m">{{.Method}}</span> <code{{if .Deprecated}} class="d"{{end}}>{{.Path}}</code> {{.Summary}}
{{if .Stability}}<span class="b">{{.Stability}}</span>{{end}}{{if .Deprecated}} <span class="b">deprecated, removed on {{.Sunset}}</span>{{end}}</li>
{{end}}</ul>{{end}}
</body></html>`))

// renderSite renders the reference page once: the spec does not change
// while the binary runs.
func renderSite(d *apiDoc) ([]byte, error) {
	byTag := map[string]*siteTag{}
	var tags []*siteTag
	for _, t := range d.doc.Tags {
		st := &siteTag{Name: t.Name, Description: t.Description}
		byTag[t.Name] = st
		tags = append(tags, st)
	}
	for _, r := range d.ops {
		op := r.Operation
		so := siteOperation{ID: op.OperationID, Method: r.Method, Path: r.Path, Summary: op.Summary, Deprecated: op.Deprecated}
		if v, ok := op.Extensions["x-stability"].(string); ok {
			so.Stability = v
		}
		if v, ok := op.Extensions[extSunset].(string); ok {
			so.Sunset = v
		}
		for _, t := range op.Tags {
			if st, ok := byTag[t]; ok {
				st.Operations = append(st.Operations, so)
			}
		}
	}
	for _, t := range tags {
		sort.Slice(t.Operations, func(i, j int) bool {
			a, b := t.Operations[i], t.Operations[j]
			if a.Path != b.Path {
				return a.Path < b.Path
			}
			return a.Method < b.Method
		})
	}
	var buf bytes.Buffer
	err := siteTemplate.Execute(&buf, map[string]any{
		"Title": d.doc.Info.Title, "Version": d.doc.Info.Version, "Tags": tags,
	})
	return buf.Bytes(), err
}

func (s *Server) site(c echo.Context) error {
	return c.HTMLBlob(http.StatusOK, s.sitePage)
}
