package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// static holds the pages' stylesheets and scripts, one folder per page, so
// that the dashboard's files live under its prefix only.
//
//go:embed static
var static embed.FS

// contentTypes are fixed here, not from package mime, which reads the
// system's tables: answers must not depend on the machine.
var contentTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
}

// asset is one embedded file, named by its content's hash so that it is
// cached for good and never mistaken for another binary's version.
type asset struct {
	hashedName, contentType string
	body                    []byte
}

// assetSet is the files of one folder of static, with their URLs.
type assetSet struct {
	prefix string           // the URL path they are served under
	byName map[string]asset // by file name
	// modules are the JavaScript modules under modules/, by path below the
	// prefix. The entry script imports them by these fixed names, so they are
	// revalidated on each load rather than cached for good.
	modules map[string][]byte
}

// The embedded files cannot change, so hashes are computed at load.
var (
	siteAssets      = mustLoadAssets("static/site", AssetsPath)
	dashboardAssets = mustLoadAssets("static/dashboard", DashboardAssetsPath)
)

// mustLoadAssets panics on an error: with embedded files, a build mistake.
func mustLoadAssets(dir, prefix string) *assetSet {
	s := &assetSet{prefix: prefix, byName: map[string]asset{}, modules: map[string][]byte{}}
	err := fs.WalkDir(static, dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		body, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		name, ext := strings.TrimPrefix(p, dir+"/"), path.Ext(p)
		if module, ok := strings.CutPrefix(name, "modules/"); ok {
			if ext != ".js" || strings.Contains(module, "/") {
				return fmt.Errorf("web: %s is not a JavaScript module", p)
			}
			s.modules[name] = body
			return nil
		}
		ctype := contentTypes[ext]
		if ctype == "" || strings.Contains(name, "/") {
			return fmt.Errorf("web: %s is neither a stylesheet nor a script of the page", p)
		}
		sum := sha256.Sum256(body)
		s.byName[name] = asset{
			hashedName:  strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext,
			contentType: ctype,
			body:        body,
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return s
}

// resources prepares the files for serving, by hashed name, and the
// modules by their fixed names.
func (s *assetSet) resources() map[string]*Resource {
	m := map[string]*Resource{}
	for _, a := range s.byName {
		m[a.hashedName] = newResource(a.body, a.contentType, cacheAsset)
	}
	for name, body := range s.modules {
		m[name] = newResource(body, contentTypes[".js"], cachePage)
	}
	return m
}

// url returns the path a page links to for name, or an error (a failed
// render) when there is no such file.
func (s *assetSet) url(name string) (string, error) {
	a, ok := s.byName[name]
	if !ok {
		return "", fmt.Errorf("web: no asset %q under %s", name, s.prefix)
	}
	return s.prefix + a.hashedName, nil
}
