package web

import _ "embed"

// FaviconPath is where browsers look for a site's icon unless a page names
// another; both pages name this one. It keeps the name browsers ask for on
// their own, though the icon is an SVG, which browsers read by its
// Content-Type.
const FaviconPath = "/favicon.ico"

// faviconType is the icon's Content-Type.
const faviconType = "image/svg+xml"

// faviconSVG is the icon: a paw print.
//
//go:embed static/favicon.svg
var faviconSVG []byte
