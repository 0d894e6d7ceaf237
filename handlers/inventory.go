package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

func (s *Server) listInventory(c echo.Context) error {
	return listPage(true, func(ctx context.Context, p store.Page) ([]store.InventoryItem, int64, error) {
		return s.store.ListInventory(ctx, store.InventoryFilter{Status: store.PetStatus(c.QueryParam("status")), Page: p})
	})(c)
}

// inventoryUpdate is the InventoryUpdate schema.
type inventoryUpdate struct {
	Quantity int `json:"quantity"`
}

func (s *Server) setInventory(c echo.Context) error {
	id, err := pathID(c, "petId")
	if err != nil {
		return err
	}
	var in inventoryUpdate
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	cond := condition(c)
	item, err := s.store.SetStock(c.Request().Context(), id, in.Quantity, cond)
	if err != nil {
		return preconditionFailed(cond, err)
	}
	setETag(c, item.Version())
	return respond(c, http.StatusOK, item)
}
