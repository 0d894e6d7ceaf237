package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// domainView is the admin API's Domain: the stored domain plus the
// troubleshooting steps, which depend on the time.
type domainView struct {
	store.Domain
	Troubleshooting []string `json:"troubleshooting,omitempty"`
}

func (s *Server) domainView(d store.Domain) domainView {
	return domainView{Domain: d, Troubleshooting: s.domains.Troubleshooting(d)}
}

func (s *Server) listDomains(c echo.Context) error {
	limit, err := pageLimit(c)
	if err != nil {
		return err
	}
	var after *store.DomainCursor
	if raw := c.QueryParam("cursor"); raw != "" {
		addedAt, name, err := decodeCursor(c, raw)
		if err != nil {
			return err
		}
		if name == "" {
			return errBadCursor
		}
		after = &store.DomainCursor{AddedAt: time.Unix(0, addedAt).UTC(), Name: name}
	}
	ds, next, err := s.domains.Page(c.Request().Context(), limit, after)
	if err != nil {
		return err
	}
	if next != nil {
		setNextPage(c, encodeCursor(c, next.AddedAt.UnixNano(), next.Name))
	}
	out := make([]domainView, 0, len(ds))
	for _, d := range ds {
		out = append(out, s.domainView(d))
	}
	return respond(c, http.StatusOK, out)
}

func (s *Server) addDomain(c echo.Context) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	d, err := s.domains.Add(c.Request().Context(), in.Name)
	if err != nil {
		return err
	}
	return respondCreated(c, domainPath(d.Name), s.domainView(d))
}

// domainByName answers 200 with the domain that get returns for the name
// path parameter (Get, or Verify, which checks it first).
func (s *Server) domainByName(get func(context.Context, string) (store.Domain, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		d, err := get(c.Request().Context(), domainParam(c))
		if err != nil {
			return err
		}
		return respond(c, http.StatusOK, s.domainView(d))
	}
}

func (s *Server) removeDomain(c echo.Context) error {
	if err := s.domains.Remove(c.Request().Context(), domainParam(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) getSettings(c echo.Context) error {
	st, err := s.domains.Settings(c.Request().Context())
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, st)
}

func (s *Server) updateSettings(c echo.Context) error {
	var in store.Settings
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	st, err := s.domains.SaveSettings(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, st)
}

// domainPath is a domain's address in the admin API. The "*" of a
// wildcard stays as it is: a path may hold it (RFC 3986 sub-delims), and
// it is how the admin document writes the path; %2A is accepted too.
func domainPath(name string) string {
	return "/admin/domains/" + strings.ReplaceAll(url.PathEscape(name), "%2A", "*")
}

// domainParam is the name path parameter, percent-decoded: the router
// hands it over as the client escaped it when the path holds escapes it
// would not have made itself ("%2a" for a wildcard's "*").
func domainParam(c echo.Context) string {
	name := c.Param("name")
	if u, err := url.PathUnescape(name); err == nil {
		return u
	}
	return name
}
