package web

import (
	"bytes"
	"html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Descriptions are CommonMark (with GitHub's tables), parsed by goldmark.
// This file fits them to the page: headings shifted, with ids that cannot
// collide; links kept to safe schemes; raw HTML shown as text; table
// alignment as classes, since the CSP allows no inline styles.

// heading is a heading found in a description, for the table of contents.
type heading struct {
	Level int
	ID    string
	Text  string
}

var markdown = goldmark.New(
	goldmark.WithExtensions(extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignNone))),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(pageNodes{}, 100))),
)

// renderMarkdown converts src to HTML and lists its headings: headingShift
// is added to heading levels (a "## Errors" inside an h2 section becomes
// an h3), and idPrefix keeps heading ids from colliding with operation ids.
func renderMarkdown(src string, headingShift int, idPrefix string) (template.HTML, []heading) {
	source := []byte(src)
	doc := markdown.Parser().Parse(text.NewReader(source))
	headings := fitToPage(doc, source, headingShift, idPrefix)
	var b bytes.Buffer
	if err := markdown.Renderer().Render(&b, source, doc); err != nil {
		// Rendering to memory cannot fail; show the text if it does.
		return template.HTML(template.HTMLEscapeString(src)), nil
	}
	return template.HTML(b.String()), headings
}

var reURLScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// fitToPage shifts and names headings, drops unsafe links and marks
// external ones, and turns table alignment into classes.
func fitToPage(doc ast.Node, source []byte, headingShift int, idPrefix string) []heading {
	var headings []heading
	ids := map[string]int{}
	var unsafeLinks []*ast.Link
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			n.Level = min(n.Level+headingShift, 6)
			plain := plainText(n, source)
			id := idPrefix + slug(plain)
			if ids[id]++; ids[id] > 1 {
				id += "-" + strconv.Itoa(ids[id]-1)
			}
			n.SetAttributeString("id", []byte(id))
			headings = append(headings, heading{Level: n.Level, ID: id, Text: plain})
		case *ast.Link:
			if !safeURL(string(n.Destination)) {
				unsafeLinks = append(unsafeLinks, n)
			} else if external(string(n.Destination)) {
				n.SetAttributeString("rel", []byte("noopener noreferrer"))
			}
		case *ast.AutoLink:
			if n.AutoLinkType == ast.AutoLinkURL && external(string(n.URL(source))) {
				n.SetAttributeString("rel", []byte("noopener noreferrer"))
			}
		case *extast.TableCell:
			if n.Alignment != extast.AlignNone {
				n.SetAttributeString("class", []byte("align-"+n.Alignment.String()))
			}
		}
		return ast.WalkContinue, nil
	})
	// A javascript: link must not run in the page: the text stays.
	for _, l := range unsafeLinks {
		parent := l.Parent()
		for c := l.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, l, c)
			c = next
		}
		parent.RemoveChild(parent, l)
	}
	return headings
}

// safeURL: http(s), mailto and relative URLs only.
func safeURL(url string) bool {
	return slices.Contains([]string{"", "http:", "https:", "mailto:"}, strings.ToLower(reURLScheme.FindString(url)))
}

func external(url string) bool {
	return strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")
}

func plainText(n ast.Node, source []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Segment.Value(source))
			case *ast.String:
				b.Write(c.Value)
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

var reSlugDrop = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	return strings.Trim(reSlugDrop.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// pageNodes renders raw HTML as escaped text (goldmark would drop it),
// and tables in a wrapper that scrolls on narrow screens.
type pageNodes struct{}

func (pageNodes) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTMLAsText)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlockAsText)
	reg.Register(extast.KindTable, renderTableInWrapper)
}

func renderRawHTMLAsText(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		html.DefaultWriter.Write(w, n.(*ast.RawHTML).Segments.Value(source))
	}
	return ast.WalkSkipChildren, nil
}

func renderHTMLBlockAsText(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	raw := n.Lines().Value(source)
	if b := n.(*ast.HTMLBlock); b.HasClosure() {
		raw = append(raw, b.ClosureLine.Value(source)...)
	}
	_, _ = w.WriteString("<p>")
	html.DefaultWriter.Write(w, bytes.TrimRight(raw, "\n"))
	_, _ = w.WriteString("</p>\n")
	return ast.WalkContinue, nil
}

func renderTableInWrapper(w util.BufWriter, _ []byte, _ ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		_, _ = w.WriteString("<div class=\"table-wrap\"><table>\n")
	} else {
		_, _ = w.WriteString("</table></div>\n")
	}
	return ast.WalkContinue, nil
}
