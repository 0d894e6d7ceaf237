package web

import (
	"html"
	"html/template"
	"regexp"
	"strconv"
	"strings"
)

// The descriptions of an OpenAPI document are CommonMark. The reference
// needs only the part of it that API descriptions use: paragraphs,
// headings, fenced code, lists, tables, block quotes, code spans, emphasis
// and links. A library would do more, but this is small, has no
// dependency, and never emits raw HTML from the source: everything is
// escaped, and links keep to safe schemes.

// heading is a heading found in a description, for the table of contents.
type heading struct {
	Level int
	ID    string
	Text  string
}

// mdOptions shape the output to its place in the page.
type mdOptions struct {
	// headingShift is added to heading levels: a "## Errors" inside a
	// section that is itself an h2 becomes an h3.
	headingShift int
	// idPrefix prefixes heading ids, so that they cannot collide with the
	// operation ids the page also uses as anchors.
	idPrefix string
}

// renderMarkdown converts src to HTML and lists its headings.
func renderMarkdown(src string, opt mdOptions) (template.HTML, []heading) {
	src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\t", "    ")
	r := &mdRenderer{opt: opt, ids: map[string]int{}}
	var b strings.Builder
	r.blocks(&b, strings.Split(strings.TrimRight(src, "\n "), "\n"))
	return template.HTML(b.String()), r.headings
}

type mdRenderer struct {
	opt      mdOptions
	headings []heading
	ids      map[string]int
}

var (
	reFence     = regexp.MustCompile("^ {0,3}(```+|~~~+)\\s*([\\w+-]*)")
	reHeading   = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	reListItem  = regexp.MustCompile(`^( {0,3})([-*+]|\d{1,9}[.)])( +|$)`)
	reTableSep  = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)
	reQuote     = regexp.MustCompile(`^ {0,3}> ?`)
	reRule      = regexp.MustCompile(`^ {0,3}(?:(?:- *){3,}|(?:\* *){3,}|(?:_ *){3,})$`)
	reSlugDrop  = regexp.MustCompile(`[^a-z0-9]+`)
	reURLScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// startsBlock reports whether line begins a block that ends a paragraph.
func startsBlock(line string, next string) bool {
	return reFence.MatchString(line) || reHeading.MatchString(line) || reListItem.MatchString(line) ||
		reQuote.MatchString(line) || reRule.MatchString(line) ||
		(strings.HasPrefix(strings.TrimSpace(line), "|") && reTableSep.MatchString(next))
}

func (r *mdRenderer) blocks(b *strings.Builder, lines []string) {
	for i := 0; i < len(lines); {
		line := lines[i]
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		switch {
		case blank(line):
			i++
		case reFence.MatchString(line):
			i = r.fence(b, lines, i)
		case reHeading.MatchString(line):
			m := reHeading.FindStringSubmatch(line)
			r.heading(b, len(m[1]), m[2])
			i++
		case reRule.MatchString(line):
			b.WriteString("<hr>\n")
			i++
		case strings.HasPrefix(strings.TrimSpace(line), "|") && reTableSep.MatchString(next):
			i = r.table(b, lines, i)
		case reQuote.MatchString(line):
			var inner []string
			for ; i < len(lines) && !blank(lines[i]); i++ {
				inner = append(inner, reQuote.ReplaceAllString(lines[i], ""))
			}
			b.WriteString("<blockquote>\n")
			r.blocks(b, inner)
			b.WriteString("</blockquote>\n")
		case reListItem.MatchString(line):
			i = r.list(b, lines, i)
		default:
			var para []string
			for ; i < len(lines) && !blank(lines[i]); i++ {
				n := ""
				if i+1 < len(lines) {
					n = lines[i+1]
				}
				if len(para) > 0 && startsBlock(lines[i], n) {
					break
				}
				para = append(para, strings.TrimSpace(lines[i]))
			}
			b.WriteString("<p>")
			b.WriteString(inline(strings.Join(para, "\n")))
			b.WriteString("</p>\n")
		}
	}
}

func (r *mdRenderer) fence(b *strings.Builder, lines []string, i int) int {
	m := reFence.FindStringSubmatch(lines[i])
	marker, lang := m[1], m[2]
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
	var code []string
	for i++; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if strings.HasPrefix(t, marker[:1]) && strings.Trim(t, marker[:1]) == "" && len(t) >= len(marker) {
			i++
			break
		}
		l := lines[i]
		for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
			l = l[1:]
		}
		code = append(code, l)
	}
	b.WriteString("<pre><code")
	if lang != "" {
		b.WriteString(` class="language-` + html.EscapeString(lang) + `"`)
	}
	b.WriteString(">")
	b.WriteString(html.EscapeString(strings.Join(code, "\n")))
	b.WriteString("</code></pre>\n")
	return i
}

func (r *mdRenderer) heading(b *strings.Builder, level int, text string) {
	level += r.opt.headingShift
	if level > 6 {
		level = 6
	}
	id := r.opt.idPrefix + slug(text)
	if n := r.ids[id]; n > 0 {
		r.ids[id]++
		id += "-" + strconv.Itoa(n)
	} else {
		r.ids[id] = 1
	}
	plain := stripInline(text)
	r.headings = append(r.headings, heading{Level: level, ID: id, Text: plain})
	tag := "h" + strconv.Itoa(level)
	b.WriteString("<" + tag + ` id="` + html.EscapeString(id) + `">` + inline(text) + "</" + tag + ">\n")
}

func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	// A pipe inside a code span or escaped with a backslash is content.
	var cells []string
	var cur strings.Builder
	inCode := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			inCode = !inCode
			cur.WriteByte(c)
		case c == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func (r *mdRenderer) table(b *strings.Builder, lines []string, i int) int {
	head := splitRow(lines[i])
	var align []string
	for _, c := range splitRow(lines[i+1]) {
		switch {
		case strings.HasPrefix(c, ":") && strings.HasSuffix(c, ":"):
			align = append(align, "center")
		case strings.HasSuffix(c, ":"):
			align = append(align, "right")
		default:
			align = append(align, "")
		}
	}
	cell := func(tag string, col int, text string) {
		b.WriteString("<" + tag)
		if col < len(align) && align[col] != "" {
			b.WriteString(` class="align-` + align[col] + `"`)
		}
		b.WriteString(">" + inline(text) + "</" + tag + ">")
	}
	// The wrapper scrolls sideways on a narrow screen instead of the page.
	b.WriteString("<div class=\"table-wrap\"><table>\n<thead><tr>")
	for c, h := range head {
		cell("th", c, h)
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for i += 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		b.WriteString("<tr>")
		row := splitRow(lines[i])
		for c := range head {
			text := ""
			if c < len(row) {
				text = row[c]
			}
			cell("td", c, text)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
	return i
}

// list renders a list starting at lines[i]: items start with the same kind
// of marker at the list's indentation; an item goes on over lines indented
// under its text and over lazy continuation lines of its paragraph.
func (r *mdRenderer) list(b *strings.Builder, lines []string, i int) int {
	m := reListItem.FindStringSubmatch(lines[i])
	ordered := m[2][0] >= '0' && m[2][0] <= '9'
	baseIndent := len(m[1])
	tag := "ul"
	if ordered {
		tag = "ol"
		if n, err := strconv.Atoi(strings.TrimRight(m[2], ".)")); err == nil && n != 1 {
			tag = `ol start="` + strconv.Itoa(n) + `"`
		}
	}
	b.WriteString("<" + tag + ">\n")
	loose := false
	var items [][]string
	for i < len(lines) {
		m := reListItem.FindStringSubmatch(lines[i])
		if m == nil || len(m[1]) != baseIndent || (m[2][0] >= '0' && m[2][0] <= '9') != ordered {
			break
		}
		contentIndent := len(m[0])
		if m[3] == "" {
			contentIndent = len(m[1]) + len(m[2]) + 1
		}
		item := []string{lines[i][len(m[0]):]}
		i++
		for i < len(lines) {
			l := lines[i]
			if blank(l) {
				// A blank line continues the item only when indented
				// content follows it.
				j := i
				for j < len(lines) && blank(lines[j]) {
					j++
				}
				if j < len(lines) && indentOf(lines[j]) >= contentIndent {
					loose = true
					item = append(item, "")
					i = j
					continue
				}
				if j < len(lines) {
					if mm := reListItem.FindStringSubmatch(lines[j]); mm != nil && len(mm[1]) == baseIndent {
						loose = true
					}
				}
				i = j
				break
			}
			if indentOf(l) >= contentIndent {
				item = append(item, l[contentIndent:])
				i++
				continue
			}
			if reListItem.MatchString(l) || startsBlock(l, "") || item[len(item)-1] == "" {
				break
			}
			item = append(item, strings.TrimSpace(l)) // lazy continuation
			i++
		}
		items = append(items, item)
	}
	for _, item := range items {
		var inner strings.Builder
		r.blocks(&inner, item)
		s := inner.String()
		if !loose {
			s = unwrapParagraphs(s)
		}
		b.WriteString("<li>" + strings.TrimSuffix(s, "\n") + "</li>\n")
	}
	b.WriteString("</" + strings.Fields(tag)[0] + ">\n")
	return i
}

func indentOf(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// unwrapParagraphs drops the <p> of a tight list item's text.
func unwrapParagraphs(s string) string {
	s = strings.ReplaceAll(s, "<p>", "")
	return strings.ReplaceAll(s, "</p>\n", "\n")
}

func slug(s string) string {
	s = reSlugDrop.ReplaceAllString(strings.ToLower(stripInline(s)), "-")
	return strings.Trim(s, "-")
}

// stripInline removes inline markup, for slugs and the table of contents.
func stripInline(s string) string {
	return strings.NewReplacer("`", "", "**", "", "*", "", "\\", "").Replace(s)
}

// inline renders code spans, emphasis, links and backslash escapes; all
// other text is escaped.
func inline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_{}[]()#+-.!|<>", s[i+1]) >= 0:
			b.WriteString(html.EscapeString(s[i+1 : i+2]))
			i += 2
		case c == '`':
			n := countRun(s[i:], '`')
			end := strings.Index(s[i+n:], s[i:i+n])
			if end < 0 {
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
			code := strings.ReplaceAll(s[i+n:i+n+end], "\n", " ")
			if len(code) > 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.Trim(code, " ") != "" {
				code = code[1 : len(code)-1]
			}
			b.WriteString("<code>" + html.EscapeString(code) + "</code>")
			i += n + end + n
		case c == '*' || c == '_':
			n := countRun(s[i:], c)
			if n > 2 {
				n = 2
			}
			delim := s[i : i+n]
			// An underscore inside a word (snake_case) is not emphasis.
			if c == '_' && i > 0 && isWordByte(s[i-1]) {
				b.WriteString(delim)
				i += n
				continue
			}
			end := closingDelim(s, i+n, delim)
			if end < 0 || blank(s[i+n:end]) || s[i+n] == ' ' {
				b.WriteString(delim)
				i += n
				continue
			}
			tag := "em"
			if n == 2 {
				tag = "strong"
			}
			b.WriteString("<" + tag + ">" + inline(s[i+n:end]) + "</" + tag + ">")
			i = end + n
		case c == '[':
			text, url, next, ok := parseLink(s, i)
			if !ok {
				b.WriteString("[")
				i++
				continue
			}
			b.WriteString(link(url, inline(text)))
			i = next
		case c == '<':
			if end := strings.IndexByte(s[i:], '>'); end > 0 && isAutolink(s[i+1:i+end]) {
				u := s[i+1 : i+end]
				b.WriteString(link(u, html.EscapeString(u)))
				i += end + 1
				continue
			}
			b.WriteString("&lt;")
			i++
		default:
			j := i + 1
			for j < len(s) && strings.IndexByte("\\`*_[<", s[j]) < 0 {
				j++
			}
			b.WriteString(html.EscapeString(s[i:j]))
			i = j
		}
	}
	return b.String()
}

func countRun(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// closingDelim finds the delimiter that closes an emphasis opened before
// from, skipping code spans; -1 when there is none.
func closingDelim(s string, from int, delim string) int {
	for j := from; j < len(s); j++ {
		switch {
		case s[j] == '`':
			n := countRun(s[j:], '`')
			if end := strings.Index(s[j+n:], s[j:j+n]); end >= 0 {
				j += n + end + n - 1
			}
		case strings.HasPrefix(s[j:], delim) && s[j-1] != ' ':
			if len(delim) == 1 && j+1 < len(s) && s[j+1] == delim[0] {
				j++ // part of a strong delimiter
				continue
			}
			if delim[0] == '_' && j+len(delim) < len(s) && isWordByte(s[j+len(delim)]) {
				continue
			}
			return j
		}
	}
	return -1
}

// parseLink parses [text](url) at s[i].
func parseLink(s string, i int) (text, url string, next int, ok bool) {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				if j+1 >= len(s) || s[j+1] != '(' {
					return "", "", 0, false
				}
				// The destination may hold balanced parentheses.
				end, open := -1, 0
				for k := j + 2; k < len(s) && end < 0; k++ {
					switch s[k] {
					case '(':
						open++
					case ')':
						if open == 0 {
							end = k - (j + 2)
						}
						open--
					}
				}
				if end < 0 {
					return "", "", 0, false
				}
				url = strings.TrimSpace(s[j+2 : j+2+end])
				// Drop a title: [text](url "title").
				if k := strings.IndexAny(url, " \t"); k >= 0 {
					url = url[:k]
				}
				return s[i+1 : j], strings.Trim(url, "<>"), j + 2 + end + 1, true
			}
		}
	}
	return "", "", 0, false
}

func isAutolink(u string) bool {
	return (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && !strings.ContainsAny(u, " <>\"")
}

// link renders an anchor. Only http(s), mailto and relative URLs become
// links: a javascript: URL in a description must not run in the page.
func link(url, textHTML string) string {
	if m := reURLScheme.FindString(url); m != "" {
		switch strings.ToLower(m) {
		case "http:", "https:", "mailto:":
		default:
			return textHTML
		}
	}
	attrs := ""
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		attrs = ` rel="noopener noreferrer"`
	}
	return `<a href="` + html.EscapeString(url) + `"` + attrs + ">" + textHTML + "</a>"
}
