package handlers

import (
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// ETags are made from the version the store keeps with each record (it
// counts the record's writes), never from its JSON: reading one costs
// nothing on the read path, where the JSON may come from a cache as it is.
// They are strong: the same version is the same bytes.

// appendETag appends the version as an ETag, "7".
func appendETag(b []byte, version int64) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, version, 10)
	return append(b, '"')
}

// etagValues are the header values of the first versions, shared by every
// answer as securityHeaders' are (each slice is full, so that an Add
// copies it): most records are read at a low version.
var etagValues = func() (v [32][]string) {
	for i := range v {
		v[i] = []string{string(appendETag(nil, int64(i)))}
	}
	return v
}()

// setETag puts the record's ETag on the answer.
func setETag(c echo.Context, version int64) {
	if version >= 0 && version < int64(len(etagValues)) {
		c.Response().Header()["Etag"] = etagValues[version]
		return
	}
	var buf [24]byte
	c.Response().Header()["Etag"] = []string{string(appendETag(buf[:0], version))}
}

// condition reads the request's If-Match and If-None-Match into the
// condition the store checks in the write's own transaction (RFC 9110
// section 13.1). If-Match compares strongly: an entity tag that this
// service cannot have issued (a weak one, one of another form) matches
// nothing. If-None-Match compares weakly, as for a read.
func condition(c echo.Context) store.Condition {
	var cond store.Condition
	h := c.Request().Header
	if values := h.Values("If-Match"); len(values) > 0 {
		cond.IfMatch = []int64{}
		star := false
		for _, tag := range entityTags(values) {
			if tag == "*" {
				star = true
				continue
			}
			cond.IfMatch = append(cond.IfMatch, etagVersion(tag))
		}
		if star {
			cond.IfMatch = []int64{}
		}
	}
	for _, tag := range entityTags(h.Values("If-None-Match")) {
		if tag == "*" {
			cond.IfNoneMatchAny = true
			continue
		}
		if v := etagVersion(strings.TrimPrefix(tag, "W/")); v > 0 {
			cond.IfNoneMatch = append(cond.IfNoneMatch, v)
		}
	}
	return cond
}

// entityTags are the members of the header values, a list each.
func entityTags(values []string) []string {
	var tags []string
	for _, v := range values {
		for _, tag := range strings.Split(v, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				tags = append(tags, tag)
			}
		}
	}
	return tags
}

// etagVersion reads a strong ETag of this service, or answers 0, which no
// record has.
func etagVersion(tag string) int64 {
	if len(tag) < 3 || tag[0] != '"' || tag[len(tag)-1] != '"' {
		return 0
	}
	n, err := strconv.ParseInt(tag[1:len(tag)-1], 10, 64)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// notModified puts the record's ETag on the answer and reports whether the
// request's If-None-Match names it (or is *), so that the answer is 304
// without a body. Weak comparison, as RFC 9110 section 13.1.2 asks.
func notModified(c echo.Context, version int64) bool {
	setETag(c, version)
	values := c.Request().Header["If-None-Match"] // the key is canonical: no lookup of its canonical form
	if len(values) == 0 {
		return false
	}
	var buf [24]byte
	current := appendETag(buf[:0], version)
	for _, v := range values {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == string(current) {
				return true
			}
		}
	}
	return false
}

// preconditionFailed turns a write's "not found" into 412 when the request
// had If-Match: a condition on a record that does not exist is not met
// (RFC 9110 section 13.1.1), If-Match: * included.
func preconditionFailed(cond store.Condition, err error) error {
	if store.ErrorCode(err) == store.ENOTFOUND && cond.NeedsRecord() {
		return apiError(store.EPRECONDITION, "%s; If-Match needs it to exist", store.ErrorMessage(err))
	}
	return err
}
