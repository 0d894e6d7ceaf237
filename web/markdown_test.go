package web

import (
	"strings"
	"testing"
)

func TestMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"paragraphs", "one\ntwo\n\nthree", "<p>one\ntwo</p>\n<p>three</p>\n"},
		{"escaping", "a < b & <script>x</script>", "<p>a &lt; b &amp; &lt;script&gt;x&lt;/script&gt;</p>\n"},
		{"code span", "use `X-API-Key: <key>` here", "<p>use <code>X-API-Key: &lt;key&gt;</code> here</p>\n"},
		{"double backticks", "``a ` b``", "<p><code>a ` b</code></p>\n"},
		{"snake_case stays", "codes invalid_request and not_found", "<p>codes invalid_request and not_found</p>\n"},
		{"emphasis", "**Deprecated** and *soon* and _so_", "<p><strong>Deprecated</strong> and <em>soon</em> and <em>so</em></p>\n"},
		{"lone star", "2 * 3 is 6", "<p>2 * 3 is 6</p>\n"},
		{"emphasis skips code", "*a `*` b*", "<p><em>a <code>*</code> b</em></p>\n"},
		{"link", "[RFC 9745](https://www.rfc-editor.org/rfc/rfc9745)", `<p><a href="https://www.rfc-editor.org/rfc/rfc9745" rel="noopener noreferrer">RFC 9745</a></p>` + "\n"},
		{"relative link", "[Pets](#tag-pets)", `<p><a href="#tag-pets">Pets</a></p>` + "\n"},
		{"javascript link", "[x](javascript:alert(1))", "<p>x</p>\n"},
		{"autolink", "<https://example.com/a?b=1&c=2>", `<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer">https://example.com/a?b=1&amp;c=2</a></p>` + "\n"},
		{"backslash escape", `\*not em\*`, "<p>*not em*</p>\n"},
		{"fence", "```json\n{\"a\": 1}\n```", `<pre><code class="language-json">{&quot;a&quot;: 1}` + "\n</code></pre>\n"},
		{"fence keeps blank lines", "```\na\n\nb\n```", "<pre><code>a\n\nb\n</code></pre>\n"},
		{"tight list with continuation", "- one\n  more\n- two", "<ul>\n<li>one\nmore</li>\n<li>two</li>\n</ul>\n"},
		{"lazy continuation", "- one\nmore", "<ul>\n<li>one\nmore</li>\n</ul>\n"},
		{"ordered", "3. c\n4. d", "<ol start=\"3\">\n<li>c</li>\n<li>d</li>\n</ol>\n"},
		{"nested", "- a\n  - b\n- c", "<ul>\n<li>a\n<ul>\n<li>b</li>\n</ul>\n</li>\n<li>c</li>\n</ul>\n"},
		{"loose", "- a\n\n- b", "<ul>\n<li>\n<p>a</p>\n</li>\n<li>\n<p>b</p>\n</li>\n</ul>\n"},
		{"list after paragraph", "Rules:\n- a\n- b", "<p>Rules:</p>\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n"},
		{"table", "| A | B |\n|---|--:|\n| `x\\|y` | 2 |\n| 3 |", "<div class=\"table-wrap\"><table>\n<thead>\n<tr>\n<th>A</th>\n<th class=\"align-right\">B</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td><code>x|y</code></td>\n<td class=\"align-right\">2</td>\n</tr>\n<tr>\n<td>3</td>\n<td></td>\n</tr>\n</tbody>\n</table></div>\n"},
		{"raw HTML block shown as text", "<div onclick=\"x()\">hi</div>", "<p>&lt;div onclick=&quot;x()&quot;&gt;hi&lt;/div&gt;</p>\n"},
		{"link to javascript keeps its text", "[a *b*](javascript:alert(1)) c", "<p>a <em>b</em> c</p>\n"},
		{"quote", "> said\n> twice", "<blockquote>\n<p>said\ntwice</p>\n</blockquote>\n"},
		{"rule", "a\n\n---\n\nb", "<p>a</p>\n<hr>\n<p>b</p>\n"},
	} {
		got, _ := renderMarkdown(tc.in, 0, "")
		if string(got) != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestMarkdownHeadings(t *testing.T) {
	got, heads := renderMarkdown("## Errors\ntext\n## Errors\n### `x-stability` flags", 1, "doc-")
	want := `<h3 id="doc-errors">Errors</h3>` + "\n<p>text</p>\n" +
		`<h3 id="doc-errors-1">Errors</h3>` + "\n" +
		`<h4 id="doc-x-stability-flags"><code>x-stability</code> flags</h4>` + "\n"
	if string(got) != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if len(heads) != 3 || heads[2].Text != "x-stability flags" || heads[0].Level != 3 {
		t.Errorf("headings %+v", heads)
	}
}

// The spec's own descriptions render without leftover markup.
func TestMarkdownOfTheSpec(t *testing.T) {
	page := string(mustRender(t, petstoreSpec(t)))
	for _, s := range []string{"**", "```", "](", "| --- |", "|---|"} {
		if strings.Contains(page, s) {
			i := strings.Index(page, s)
			t.Errorf("markup %q left in the page: ...%s...", s, page[max(0, i-80):min(len(page), i+80)])
		}
	}
}
