package handlers

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

func categoryCreated(cat store.Category, _ none) (answer, error) {
	return created(fmt.Sprintf("/categories/%d", cat.ID), &cat)
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
