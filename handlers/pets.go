package handlers

import (
	"net/http"
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
	pets, next, err := s.store.ListPets(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return respondList(c, pets, next)
}

func (s *Server) createPet(c echo.Context) error {
	var pet store.Pet
	if err := decodeNewPet(c, &pet); err != nil {
		return err
	}
	if err := s.store.CreatePet(c.Request().Context(), &pet); err != nil {
		return err
	}
	return respondCreated(c, "/pets/"+strconv.FormatInt(pet.ID, 10), &pet)
}

func (s *Server) getPet(c echo.Context) error {
	id, err := pathID(c, "petId")
	if err != nil {
		return err
	}
	// The store keeps a pet in its API form: sent as stored.
	pet, err := s.store.PetJSON(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return respondEncoded(c, http.StatusOK, pet)
}

func (s *Server) replacePet(c echo.Context) error {
	id, err := pathID(c, "petId")
	if err != nil {
		return err
	}
	var pet store.Pet
	if err := decodeNewPet(c, &pet); err != nil {
		return err
	}
	pet.ID = id
	if err := s.store.ReplacePet(c.Request().Context(), &pet); err != nil {
		return err
	}
	return respond(c, http.StatusOK, &pet)
}

// newPet is the NewPet schema. decodeBody refuses unknown fields, id among
// them, even when validation is off.
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
