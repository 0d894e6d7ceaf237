package handlers

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// ETags are made from the version the store keeps with each record, never
// from its JSON, so reading one costs nothing where the JSON comes from a
// cache. They are strong: the same version is the same bytes.

// appendETag appends the version as an ETag, "7".
func appendETag(b []byte, version int64) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, version, 10)
	return append(b, '"')
}

// etagValues are the low versions' header values, shared by every answer
// (each slice is full, so that an Add copies it).
var etagValues = func() (v [32][]string) {
	for i := range v {
		v[i] = []string{string(appendETag(nil, int64(i)))}
	}
	return v
}()

func setETag(c echo.Context, version int64) {
	if version >= 0 && version < int64(len(etagValues)) {
		c.Response().Header()["Etag"] = etagValues[version]
		return
	}
	var buf [24]byte
	c.Response().Header()["Etag"] = []string{string(appendETag(buf[:0], version))}
}

// condition reads If-Match and If-None-Match into the condition the store
// checks in the write's transaction (RFC 9110 section 13.1). If-Match
// compares strongly (a tag this service cannot have issued matches
// nothing); If-None-Match weakly.
func condition(c echo.Context) store.Condition {
	var cond store.Condition
	h := c.Request().Header
	if values := h.Values("If-Match"); len(values) > 0 {
		cond.IfMatch = []int64{}
		if tags := entityTags(values); !slices.Contains(tags, "*") {
			for _, tag := range tags {
				cond.IfMatch = append(cond.IfMatch, etagVersion(tag))
			}
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

// etagVersion reads a strong ETag of this service, or 0, which no record
// has.
func etagVersion(tag string) int64 {
	// Tags compare as strings (RFC 9110 section 8.8.3.2): "07" is not "7".
	if len(tag) < 3 || tag[0] != '"' || tag[len(tag)-1] != '"' || tag[1] < '1' || tag[1] > '9' {
		return 0
	}
	n, err := strconv.ParseInt(tag[1:len(tag)-1], 10, 64)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

const aList = -1 // a list of records: it always exists, and has no ETag

// readConditions applies a read's conditions to the version of what it
// found, 0 for nothing, aList for a list (RFC 9110 section 13.2.2), and
// sets its ETag: first If-Match, which must name the version strongly (*
// any version), else 412 as on writes; then If-None-Match, which names it
// weakly (or is *), for a 304. done: err is the answer.
func readConditions(c echo.Context, version int64) (done bool, err error) {
	h := c.Request().Header // the keys are canonical: no lookup of their canonical form
	if _, ok := h["If-Match"]; ok {
		if tags := condition(c).IfMatch; version == 0 || len(tags) > 0 && !slices.Contains(tags, version) {
			return true, apiError(store.EPRECONDITION, "the resource is not at a version If-Match names, or does not exist, or is a list (no ETag: only * reads it); read it again for its current ETag")
		}
	}
	if version < 1 {
		return false, nil
	}
	setETag(c, version)
	current := c.Response().Header()["Etag"][0]
	for _, tag := range entityTags(h["If-None-Match"]) {
		if tag = strings.TrimPrefix(tag, "W/"); tag == "*" || tag == current {
			return true, c.NoContent(http.StatusNotModified)
		}
	}
	return false, nil
}

// preconditionFailed turns a "not found" into 412 under If-Match:
// a condition on a missing record is not met (RFC 9110 13.1.1).
func preconditionFailed(cond store.Condition, err error) error {
	if store.ErrorCode(err) == store.ENOTFOUND && cond.NeedsRecord() {
		return apiError(store.EPRECONDITION, "%s; If-Match needs it to exist", store.ErrorMessage(err))
	}
	return err
}
