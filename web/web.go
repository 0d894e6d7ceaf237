// Package web is what people see in a browser: the API reference rendered
// from the public OpenAPI document, and the operator's dashboard, a static
// page driving the admin API. All is embedded, prepared at start, and free
// of inline script or style, so that ContentSecurityPolicy holds.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Where the handlers mount the site. The dashboard and its assets share
// one prefix, so that one check keeps them off customers' domains.
const (
	ReferencePath       = "/"
	AssetsPath          = "/assets/"
	DashboardPath       = "/dashboard/"
	DashboardAssetsPath = "/dashboard/assets/"
)

// ContentSecurityPolicy is sent with both pages: same-origin only, and no
// framing (the dashboard holds the admin token, the reference sends API
// keys).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Cache lifetimes: assets are named by their content's hash and kept for
// good; pages change with a deploy and are revalidated on every view.
const (
	cacheAsset = "public, max-age=31536000, immutable"
	cachePage  = "no-cache"
)

// Resource is one response prepared in full at start: body, gzipped body
// and their headers. Safe for concurrent use.
type Resource struct {
	body, gzipped []byte
	etag, gzETag  string
	header        [][2]string
}

// newResource prepares body for serving; text worth compressing gets a
// gzip variant, each variant its own strong ETag (RFC 9110).
func newResource(body []byte, contentType, cacheControl string, extra ...[2]string) *Resource {
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:12])
	r := &Resource{body: body, etag: `"` + tag + `"`}
	r.header = append([][2]string{
		{"Content-Type", contentType},
		{"Cache-Control", cacheControl},
		{"X-Content-Type-Options", "nosniff"},
		{"Vary", "Accept-Encoding"},
	}, extra...)
	if len(body) > 512 {
		if gz := gzipBytes(body); len(gz) < len(body)*9/10 {
			r.gzipped, r.gzETag = gz, `"`+tag+`-gz"`
		}
	}
	return r
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b) // writes to a bytes.Buffer do not fail
	_ = zw.Close()
	return buf.Bytes()
}

// ServeHTTP answers GET and HEAD, with 304 when the client's copy is current.
func (r *Resource) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	for _, kv := range r.header {
		h.Set(kv[0], kv[1])
	}
	body, etag := r.body, r.etag
	if r.gzipped != nil && acceptsGzip(req.Header.Get("Accept-Encoding")) {
		body, etag = r.gzipped, r.gzETag
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("ETag", etag)
	if noneMatch := req.Header.Get("If-None-Match"); noneMatch != "" && r.matches(noneMatch) {
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if req.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// matches reports whether an If-None-Match list names either variant
// (weak comparison, RFC 9110 13.1.2).
func (r *Resource) matches(list string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == r.etag || (r.gzETag != "" && t == r.gzETag) {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding names gzip (or *) without
// a weight of zero.
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "x-gzip" && coding != "*" {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && q == 0 {
					return false
				}
			}
		}
		return true
	}
	return false
}

func pageHeaders(referrer string) [][2]string {
	return [][2]string{
		{"Content-Security-Policy", ContentSecurityPolicy},
		{"Referrer-Policy", referrer},
		{"X-Frame-Options", "DENY"},
	}
}

// Site is everything the package serves, prepared once: the reference,
// the dashboard, their icon (at FaviconPath) and assets.
type Site struct {
	Reference, Dashboard, Favicon *Resource
	siteAssets, dashboardAssets   map[string]*Resource
}

// NewSite prepares the reference page (as RenderReference made it), the
// dashboard and the embedded assets for serving.
func NewSite(referencePage []byte) (*Site, error) {
	// Static: everything about the project comes from the admin API.
	dash, err := execute(dashboardTemplate, nil)
	if err != nil {
		return nil, fmt.Errorf("rendering the dashboard: %w", err)
	}
	return &Site{
		Reference: newResource(referencePage, "text/html; charset=utf-8", cachePage, pageHeaders("strict-origin-when-cross-origin")...),
		// Nothing about the operator's session needs to leave the page.
		Dashboard:       newResource(dash, "text/html; charset=utf-8", cachePage, pageHeaders("no-referrer")...),
		siteAssets:      siteAssets.resources(),
		dashboardAssets: dashboardAssets.resources(),
		// Not named by a hash: browsers ask for it by this name.
		Favicon: newResource(faviconSVG, faviconType, "public, max-age=86400"),
	}, nil
}

// SiteAsset returns the reference page's asset with this hashed name (the
// path after AssetsPath), or nil.
func (s *Site) SiteAsset(name string) *Resource { return s.siteAssets[name] }

// DashboardAsset returns the dashboard's asset with this hashed name (the
// path after DashboardAssetsPath), or nil.
func (s *Site) DashboardAsset(name string) *Resource { return s.dashboardAssets[name] }
