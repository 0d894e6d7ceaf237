package handlers

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

func (s *Server) listPets(c echo.Context) error {
	p, err := page(c)
	if err != nil {
		return err
	}
	cat, err := queryID(c, "categoryId")
	if err != nil {
		return err
	}
	f := store.PetFilter{Status: store.PetStatus(c.QueryParam("status")), CategoryID: cat, Page: p}
	if ids := c.QueryParams()["id"]; len(ids) > 0 {
		return s.petsByID(c, ids, f)
	}
	if done, err := readConditions(c, aList); done {
		return err
	}
	pets, next, err := s.store.ListPets(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return respondList(c, pets, next)
}

func petCreated(p store.Pet, _ none) (answer, error) {
	return created(petURL(p.ID), &p)
}

// petURL is where a pet is read: GET /pets/{petId}'s successor, which
// answers after its sunset.
func petURL(id int64) string {
	return "/pets?id=" + strconv.FormatInt(id, 10)
}

// maxPetIDs is how many ids GET /pets?id=... reads (the spec's maxItems),
// and its default page size.
const maxPetIDs = store.MaxPageSize

// petsByID answers the page of the pets among ids that exist and match the
// other filters, in id order, each read as a single pet is. For one pet it
// carries the ETag and answers 304 to a matching If-None-Match, so that a
// client reading here can write with If-Match.
func (s *Server) petsByID(c echo.Context, raw []string, f store.PetFilter) error {
	if len(raw) > maxPetIDs {
		return apiError(store.EINVALID, "query parameter \"id\": at most %d ids, %d given", maxPetIDs, len(raw))
	}
	ids := make([]int64, 0, len(raw))
	for _, r := range raw {
		id, err := parseID("query parameter \"id\"", r)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	one := len(ids) == 1
	ids = slices.DeleteFunc(ids, func(id int64) bool { return id <= f.After })
	limit := cmp.Or(f.Limit, maxPetIDs)
	ctx := c.Request().Context()
	b := append(make([]byte, 0, 2+min(len(ids), limit)*96), '[')
	n := 0
	var last, next, version int64
	for _, id := range ids {
		if n == limit {
			next = last
			break
		}
		var err error
		before := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		if f.Status == "" && f.CategoryID == 0 {
			var j []byte
			if j, version, err = s.store.PetJSON(ctx, id); err == nil {
				b = append(b, j...)
			}
		} else {
			var p store.Pet
			if p, err = s.store.Pet(ctx, id); err == nil {
				if (f.Status != "" && p.Status != f.Status) || (f.CategoryID != 0 && p.CategoryID != f.CategoryID) {
					b = b[:before]
					continue
				}
				b = p.AppendJSON(b)
				version = p.Version
			}
		}
		if store.ErrorCode(err) == store.ENOTFOUND {
			b = b[:before]
			continue
		}
		if err != nil {
			return err
		}
		n, last = n+1, id
	}
	if next > 0 {
		setNextPage(c, "cursor", encodeCursor(c, next, ""))
	}
	// The one pet asked for, or none (version 0), else a list: the read's
	// conditions judge it.
	if !one {
		version, n = aList, 1
	}
	if done, err := readConditions(c, version*int64(n)); done {
		return err
	}
	return respondEncoded(c, http.StatusOK, append(b, ']'))
}

func (s *Server) getPet(c echo.Context) error {
	id, err := pathID(c, "petId")
	if err != nil {
		return err
	}
	// The store keeps a pet in its API form: sent as stored.
	pet, version, err := s.store.PetJSON(c.Request().Context(), id)
	if err != nil {
		return preconditionFailed(condition(c), err)
	}
	if done, err := readConditions(c, version); done {
		return err
	}
	return respondEncoded(c, http.StatusOK, pet)
}

// newPet is the NewPet schema; decodeBody refuses unknown fields, id too.
type newPet struct {
	Name       string          `json:"name"`
	CategoryID int64           `json:"categoryId"`
	Status     store.PetStatus `json:"status"`
}

func decodeNewPet(c echo.Context, pet *store.Pet) error {
	var in newPet
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	*pet = store.Pet{Name: in.Name, CategoryID: in.CategoryID, Status: in.Status}
	return nil
}
