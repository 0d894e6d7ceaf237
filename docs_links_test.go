package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocsLinksResolve checks every relative link of the README and of
// docs/: the file it names exists, and the anchor, if any, is a heading of
// that file as GitHub renders it. Links to other sites are not followed
// (the tests run offline).
func TestDocsLinksResolve(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		anchors[path] = headingAnchors(string(text))
		return anchors[path]
	}
	links := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range markdownLinks(string(text)) {
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // https:, mailto:
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = file
			} else {
				path = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: the link %q names %s, which does not exist", file, target, path)
				continue
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: the link %q has an anchor into a file that is not Markdown", file, target)
			} else if !anchorsOf(path)[anchor] {
				t.Errorf("%s: the link %q names the anchor #%s, which %s has no heading for", file, target, anchor, path)
			}
		}
	}
	if links < 10 {
		t.Errorf("only %d relative links found; is the link pattern still right?", links)
	}
}

// markdownLinks returns the targets of the inline links [text](target) of
// a Markdown text, outside code blocks and code spans.
func markdownLinks(text string) []string {
	var targets []string
	parts := strings.Split(text, "```")
	for i := 0; i < len(parts); i += 2 { // the odd parts are code blocks
		prose := regexp.MustCompile("`[^`\n]*`").ReplaceAllString(parts[i], "")
		for _, m := range regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(prose, -1) {
			targets = append(targets, m[1])
		}
	}
	return targets
}

// headingAnchors returns the anchors GitHub gives a Markdown text's
// headings: lower case, punctuation dropped, spaces as hyphens, and -1, -2
// after repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	parts := strings.Split(text, "```")
	for i := 0; i < len(parts); i += 2 {
		for _, line := range strings.Split(parts[i], "\n") {
			if !strings.HasPrefix(line, "#") {
				continue
			}
			heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
			slug := strings.Map(func(r rune) rune {
				switch {
				case r == ' ' || r == '-':
					return '-'
				case r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
					return r
				}
				return -1
			}, strings.ToLower(heading))
			if n := seen[slug]; n > 0 {
				anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
	}
	return anchors
}
