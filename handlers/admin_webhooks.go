package handlers

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"petstore/events"
	"petstore/store"
)

// webhookIn is the body of POST and PATCH /admin/webhooks.
type webhookIn struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

// deliveryView is a delivery as the admin API shows it.
type deliveryView struct {
	store.Delivery
	EventID string `json:"eventId"`
}

// readWebhook reads a webhook's body and judges its URL and event types.
func (s *Server) readWebhook(c echo.Context) (webhookIn, error) {
	var in webhookIn
	if err := decodeBody(c, &in); err != nil {
		return in, err
	}
	if in.URL != nil {
		if err := s.cfg.WebhookPolicy.CheckURL(c.Request().Context(), *in.URL); err != nil {
			return in, apiError(store.EUNPROCESSABLE, "url: %v", err)
		}
	}
	if in.Events != nil {
		for _, e := range *in.Events {
			if e != "*" && !slices.Contains(store.EventTypes, e) {
				return in, apiError(store.EUNPROCESSABLE, "events: %q is not an event type; the types are listed in the admin document's WebhookEventType, or \"*\" for all", e)
			}
		}
	}
	return in, nil
}

// decodeNewWebhook reads POST /admin/webhooks into the webhook to create,
// enabled unless it says otherwise, with a new secret.
func (s *Server) decodeNewWebhook(c echo.Context, w *store.Webhook) error {
	in, err := s.readWebhook(c)
	if err != nil {
		return err
	}
	*w = store.Webhook{URL: *in.URL, Events: *in.Events, Enabled: true, Secret: events.NewSecret()}
	given(&w.Description, in.Description)
	given(&w.Enabled, in.Enabled)
	return nil
}

// webhookCreated answers POST /admin/webhooks: the only answer with the
// secret, with rotate-secret's.
func webhookCreated(w store.Webhook, _ none) (answer, error) {
	return answerJSON(http.StatusCreated, "/admin/webhooks/"+strconv.FormatInt(w.ID, 10), &w)
}

func (s *Server) listWebhooks(c echo.Context) error {
	return listPage(false, func(ctx context.Context, p store.Page) ([]store.Webhook, int64, error) {
		ws, next, err := s.store.Webhooks(ctx, p)
		for i := range ws {
			ws[i] = s.webhookView(ws[i])
		}
		return ws, next, err
	})(c)
}

func (s *Server) getWebhook(c echo.Context) error {
	w, err := s.webhookAt(c)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, s.webhookView(w))
}

// webhookView is w without its secrets, with PreviousSecretExpiresAt only
// while the previous secret still signs.
func (s *Server) webhookView(w store.Webhook) store.Webhook {
	w.ExpirePreviousSecret(s.now(), false)
	return w.Public()
}

func (s *Server) webhookAt(c echo.Context) (store.Webhook, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return store.Webhook{}, err
	}
	return s.store.Webhook(c.Request().Context(), id)
}

// changeWebhook applies change to the path's endpoint with the request's
// Idempotency-Key, and answers it as it is then.
func (s *Server) changeWebhook(c echo.Context, key *store.IdempotentWrite, change func(*store.Webhook) error) (store.Webhook, none, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return store.Webhook{}, none{}, err
	}
	w, err := s.store.UpdateWebhook(c.Request().Context(), id, change, key)
	return w, none{}, err
}

func (s *Server) updateWebhook(c echo.Context) error {
	in, err := s.readWebhook(c)
	if err != nil {
		return err
	}
	now := s.now()
	w, _, err := s.changeWebhook(c, nil, func(w *store.Webhook) error {
		w.ExpirePreviousSecret(now, false)
		given(&w.URL, in.URL)
		given(&w.Events, in.Events)
		given(&w.Description, in.Description)
		if in.Enabled != nil {
			if *in.Enabled && !w.Enabled {
				// Enabled again: its failures start over.
				w.DisabledReason, w.FailingSince = "", nil
			}
			w.Enabled = *in.Enabled
		}
		return nil
	})
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, s.webhookView(w))
}

// rotateWebhookSecret gives the webhook a new secret; the old one signs
// beside it for store.DefaultSecretOverlap, or until
// expire-previous-secret. The overlap is no parameter: it would change the
// call's signature in generated clients, and a separate call serves both
// cases (a receiver ready sooner, a leaked secret).
func (s *Server) rotateWebhookSecret(c echo.Context, key *store.IdempotentWrite) (store.Webhook, none, error) {
	secret, now := events.NewSecret(), s.now()
	return s.changeWebhook(c, key, func(w *store.Webhook) error {
		w.RotateSecret(secret, now, store.DefaultSecretOverlap)
		return nil
	})
}

// secretRotated answers rotate-secret with the new secret (never the old).
func secretRotated(w store.Webhook, _ none) (answer, error) {
	w.PreviousSecret = ""
	return answerJSON(http.StatusOK, "", &w)
}

// expirePreviousSecret ends a rotation's overlap.
func (s *Server) expirePreviousSecret(c echo.Context, key *store.IdempotentWrite) (store.Webhook, none, error) {
	return s.changeWebhook(c, key, func(w *store.Webhook) error {
		w.ExpirePreviousSecret(s.now(), true)
		return nil
	})
}

// previousSecretExpired answers expire-previous-secret, without secrets.
func previousSecretExpired(w store.Webhook, _ none) (answer, error) {
	return answerJSON(http.StatusOK, "", w.Public())
}

func (s *Server) testWebhook(c echo.Context, key *store.IdempotentWrite) (store.Event, none, error) {
	w, err := s.webhookAt(c)
	if err != nil {
		return store.Event{}, none{}, err
	}
	if !w.Enabled {
		// A disabled webhook is sent nothing: the test would be queued for no one.
		return store.Event{}, none{}, store.Errorf(store.ECONFLICT, "webhook %d is disabled, so a test would not be sent: enable it first (PATCH with {\"enabled\": true})", w.ID)
	}
	e, err := store.NewEvent(store.EventWebhookTest, s.webhookView(w))
	if err != nil {
		return store.Event{}, none{}, err
	}
	ev, err := s.store.RecordEvent(c.Request().Context(), e, w.ID, key)
	return ev, none{}, err
}

// testRecorded answers POST /admin/webhooks/{id}/test: the event recorded.
func testRecorded(ev store.Event, _ none) (answer, error) {
	return answerJSON(http.StatusAccepted, "", &ev)
}

func (s *Server) listDeliveries(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	return listPage(false, func(ctx context.Context, p store.Page) ([]deliveryView, int64, error) {
		ds, next, err := s.store.Deliveries(ctx, id, p)
		out := make([]deliveryView, len(ds))
		for i, d := range ds {
			out[i] = deliveryView{d, d.EventID.String()}
		}
		return out, next, err
	})(c)
}

func (s *Server) retryDelivery(c echo.Context, key *store.IdempotentWrite) (store.Delivery, store.EventID, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return store.Delivery{}, store.EventID{}, err
	}
	did, err := pathID(c, "deliveryId")
	if err != nil {
		return store.Delivery{}, store.EventID{}, err
	}
	d, err := s.store.RetryDelivery(c.Request().Context(), id, did, s.now(), key)
	return d, d.EventID, err
}

// retryScheduled answers a delivery's retry: the new delivery, its event's
// id beside it since its JSON leaves the id out.
func retryScheduled(d store.Delivery, event store.EventID) (answer, error) {
	return answerJSON(http.StatusAccepted, "", deliveryView{d, event.String()})
}
