package web

import _ "embed"

// FaviconPath is the icon both pages name, at the name browsers ask for on
// their own; it is an SVG, read by its Content-Type.
const FaviconPath = "/favicon.ico"

const faviconType = "image/svg+xml"

// faviconSVG is the icon: a paw print.
//
//go:embed static/favicon.svg
var faviconSVG []byte
