package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// static holds the pages' stylesheets and scripts, one folder per page so
// that the dashboard's files live under the dashboard's prefix only.
//
//go:embed static
var static embed.FS

// contentTypes are fixed here rather than taken from package mime, which
// also reads the system's tables: the answer must not depend on the machine.
var contentTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
}

// asset is one embedded file, named by the hash of its content so that it
// can be cached for good and a new binary's version is never mistaken for
// the old one.
type asset struct {
	name, hashedName, contentType string
	body                          []byte
}

// assetSet is the files of one folder of static, with their URLs.
type assetSet struct {
	prefix string // the URL path they are served under
	list   []asset
	byName map[string]*asset
}

// The embedded files cannot change while the binary runs, so their hashes
// are computed once, when the package loads.
var (
	siteAssets      = mustLoadAssets("static/site", AssetsPath)
	dashboardAssets = mustLoadAssets("static/dashboard", DashboardAssetsPath)
)

func mustLoadAssets(dir, prefix string) *assetSet {
	s, err := loadAssets(static, dir, prefix)
	if err != nil {
		panic(err) // the files are embedded: this is a build mistake
	}
	return s
}

func loadAssets(fsys fs.FS, dir, prefix string) (*assetSet, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	s := &assetSet{prefix: prefix, byName: map[string]*asset{}}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ext := path.Ext(e.Name())
		ctype := contentTypes[ext]
		if ctype == "" {
			return nil, fmt.Errorf("web: no content type for %s", e.Name())
		}
		sum := sha256.Sum256(body)
		s.list = append(s.list, asset{
			name:        e.Name(),
			hashedName:  strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:5]) + ext,
			contentType: ctype,
			body:        body,
		})
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].name < s.list[j].name })
	for i := range s.list {
		s.byName[s.list[i].name] = &s.list[i]
	}
	return s, nil
}

// url returns the path a page links to for the file name, or an error when
// there is no such file, which the templates turn into a failed render.
func (s *assetSet) url(name string) (string, error) {
	a, ok := s.byName[name]
	if !ok {
		return "", fmt.Errorf("web: no asset %q under %s", name, s.prefix)
	}
	return s.prefix + a.hashedName, nil
}
