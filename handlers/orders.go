package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

func (s *Server) listOrders(c echo.Context) error {
	return listPage(true, func(ctx context.Context, p store.Page) ([]store.Order, int64, error) {
		pet, err := queryID(c, "petId")
		if err != nil {
			return nil, 0, err
		}
		f := store.OrderFilter{PetID: pet, Page: p}
		if raw := c.QueryParam("complete"); raw != "" {
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return nil, 0, apiError(store.EINVALID, "query parameter \"complete\": must be true or false")
			}
			f.Complete = &b
		}
		return s.store.ListOrders(ctx, f)
	})(c)
}

// orderInput is NewOrder and OrderUpdate as a body: every field optional,
// so that absent differs from zero.
type orderInput struct {
	PetID    *int64     `json:"petId"`
	Quantity *int       `json:"quantity"`
	ShipDate *time.Time `json:"shipDate"`
	Complete *bool      `json:"complete"`
}

// decodeOrder decodes the body with its shipDate in UTC.
func decodeOrder(c echo.Context) (orderInput, error) {
	var in orderInput
	if err := decodeBody(c, &in); err != nil || in.ShipDate == nil {
		return in, err
	}
	// An offset can carry a date out of JSON date-times' years (0000-9999),
	// which the store could not encode. PostgreSQL keeps microseconds: both
	// stores keep (and answer) what it can, so that an answer is what a read
	// gives back and a move between stores loses nothing.
	if *in.ShipDate = in.ShipDate.UTC().Truncate(time.Microsecond); in.ShipDate.Year() < 1 || in.ShipDate.Year() > 9999 {
		return in, apiError(store.EINVALID, "body.shipDate: must fall within the years 0001 to 9999 in UTC")
	}
	return in, nil
}

// decodeNewOrder reads POST /store/orders' body into the order, one unit
// unless it says otherwise.
func decodeNewOrder(c echo.Context, o *store.Order) error {
	in, err := decodeOrder(c)
	if err != nil {
		return err
	}
	if in.PetID == nil {
		return apiError(store.EINVALID, "body.petId: is required to place an order")
	}
	*o = store.Order{PetID: *in.PetID, Quantity: 1, ShipDate: in.ShipDate}
	given(&o.Quantity, in.Quantity)
	given(&o.Complete, in.Complete)
	return nil
}

func orderPlaced(o store.Order, _ none) (answer, error) {
	return created(fmt.Sprintf("/store/orders/%d", o.ID), &o)
}

// updateOrder changes shipDate and complete; petId and quantity are fixed
// once stock is taken, allowed unchanged so an order read can be PUT back.
func (s *Server) updateOrder(c echo.Context) error {
	id, err := pathID(c, "orderId")
	if err != nil {
		return err
	}
	in, err := decodeOrder(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if in.PetID != nil || in.Quantity != nil {
		cur, err := s.store.Order(ctx, id)
		if err != nil {
			return err
		}
		if in.PetID != nil && *in.PetID != cur.PetID {
			return apiError(store.EINVALID, "body.petId: cannot change; cancel the order and place a new one")
		}
		if in.Quantity != nil && *in.Quantity != cur.Quantity {
			return apiError(store.EINVALID, "body.quantity: cannot change; cancel the order and place a new one")
		}
	}
	cond := condition(c)
	o, err := s.store.UpdateOrder(ctx, id, store.OrderUpdate{ShipDate: in.ShipDate, Complete: in.Complete}, cond)
	if err != nil {
		return preconditionFailed(cond, err)
	}
	setETag(c, o.Version)
	return respond(c, http.StatusOK, o)
}
