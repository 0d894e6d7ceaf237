package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// domainView is the admin API's Domain: the stored domain plus the
// time-dependent troubleshooting steps.
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
		setNextPage(c, "cursor", encodeCursor(c, next.AddedAt.UnixNano(), next.Name))
	}
	out := make([]domainView, 0, len(ds))
	for _, d := range ds {
		out = append(out, s.domainView(d))
	}
	return respond(c, http.StatusOK, out)
}

func (s *Server) addDomain(c echo.Context, key *store.IdempotentWrite) (store.Domain, none, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeBody(c, &in); err != nil {
		return store.Domain{}, none{}, err
	}
	d, err := s.domains.Add(c.Request().Context(), in.Name, key)
	return d, none{}, err
}

// domainAdded answers POST /admin/domains: a new domain is pending, so it
// has no troubleshooting steps, replayed or not.
func domainAdded(d store.Domain, _ none) (answer, error) {
	return answerJSON(http.StatusCreated, domainPath(d.Name), domainView{Domain: d})
}

func (s *Server) getDomain(c echo.Context) error {
	d, err := s.domains.Get(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, s.domainView(d))
}

// verifyDomain checks a domain's DNS now (Re-verify). The manager changes
// it in several steps, not one store write, so an Idempotency-Key's answer
// is kept after them in a write of its own: a crash in between loses the
// answer, not the change, and the retry verifies again. The
// time-dependent troubleshooting steps are kept beside the domain.
func (s *Server) verifyDomain(c echo.Context, key *store.IdempotentWrite) (store.Domain, []string, error) {
	ctx := c.Request().Context()
	d, err := s.domains.Verify(ctx, c.Param("name"))
	if err != nil {
		return d, nil, err
	}
	steps := s.domains.Troubleshooting(d)
	return d, steps, s.store.KeepAnswer(ctx, key, &d, steps)
}

// domainVerified is the answer to POST /admin/domains/{name}/verify.
func domainVerified(d store.Domain, troubleshooting []string) (answer, error) {
	return answerJSON(http.StatusOK, "", domainView{d, troubleshooting})
}

func (s *Server) removeDomain(c echo.Context) error {
	if err := s.domains.Remove(c.Request().Context(), c.Param("name")); err != nil {
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

// domainPath is a domain's admin API address. A wildcard's "*" stays as it
// is, as the admin document writes it (RFC 3986 sub-delims); %2A works too.
func domainPath(name string) string {
	return "/admin/domains/" + strings.ReplaceAll(url.PathEscape(name), "%2A", "*")
}
