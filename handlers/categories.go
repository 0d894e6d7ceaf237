package handlers

import (
	stdjson "encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

func (s *Server) createCategory(c echo.Context) error {
	var cat store.Category
	if err := decodeNewCategory(c, &cat); err != nil {
		return err
	}
	if err := s.store.CreateCategory(c.Request().Context(), &cat); err != nil {
		return err
	}
	return sendAnswer(c, categoryCreated, &cat)
}

// categoryCreated is the answer to POST /categories.
func categoryCreated(record any) (answer, error) {
	cat := record.(*store.Category)
	body, err := stdjson.Marshal(cat)
	return created(fmt.Sprintf("/categories/%d", cat.ID), cat.Version, body), err
}

func (s *Server) replaceCategory(c echo.Context) error {
	id, err := pathID(c, "categoryId")
	if err != nil {
		return err
	}
	var cat store.Category
	if err := decodeNewCategory(c, &cat); err != nil {
		return err
	}
	cat.ID = id
	ctx := ifMatch(c)
	if err := s.store.ReplaceCategory(ctx, &cat); err != nil {
		return preconditionFailed(ctx, err)
	}
	setETag(c, cat.Version)
	return respond(c, http.StatusOK, cat)
}

// newCategory is the NewCategory schema.
type newCategory struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func decodeNewCategory(c echo.Context, cat *store.Category) error {
	var in newCategory
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	*cat = store.Category{Name: in.Name, Description: in.Description}
	return nil
}
