package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/server/accesslog"
	"petstore/store"
)

// route is one operation of an OpenAPI document and the handler serving it.
type route struct {
	method, path string
	handle       echo.HandlerFunc
}

func (s *Server) routes(validate bool) error {
	e := s.echo
	s.unknownHosts = accesslog.NewSummary(s.log, "requests for unknown hosts", summaryWindow)
	s.refusedByRate = accesslog.NewSummary(s.log, "requests refused by the rate limit", summaryWindow)
	// Every answer passes these, the router's 404 and 405 too, so that
	// unknown hosts and paths are logged, have a request id, and get 421.
	every := []echo.MiddlewareFunc{s.requestID, s.accessLog, s.recoverPanics, securityHeaders}
	if len(s.cfg.CORSOrigins) > 0 {
		// Before the limits, so that a script can read their 429 and 503;
		// preflights are answered here, uncounted.
		every = append(every, cors(s.cfg.CORSOrigins))
	}
	// The rate limit comes before anything that costs work.
	every = append(every, s.rateLimit(), limitHeaders, s.routeHost, s.guardOperatorPaths)
	e.Use(aroundRouted(every...))
	// The in-flight cap is per route, after the body is read (register).
	s.inFlight = newInFlight(s.cfg.MaxInFlight, s.cfg.MaxClientInFlight)

	public := []route{
		{http.MethodGet, "/pets", s.listPets},
		{http.MethodPost, "/pets", keyed(s, false, createFrom(decodeNewPet, s.store.CreatePet), petCreated)},
		{http.MethodGet, "/pets/:petId", s.getPet},
		{http.MethodPut, "/pets/:petId", replaceByID("petId", decodeNewPet, s.store.ReplacePet, func(p *store.Pet) (*int64, *int64) { return &p.ID, &p.Version })},
		{http.MethodDelete, "/pets/:petId", deleteIfMatch("petId", s.store.DeletePet)},
		{http.MethodGet, "/categories", listPage(true, s.store.ListCategories)},
		{http.MethodPost, "/categories", keyed(s, false, createFrom(decodeNewCategory, s.store.CreateCategory), categoryCreated)},
		{http.MethodGet, "/categories/:categoryId", getByID("categoryId", s.store.Category, func(c *store.Category) int64 { return c.Version })},
		{http.MethodPut, "/categories/:categoryId", replaceByID("categoryId", decodeNewCategory, s.store.ReplaceCategory, func(c *store.Category) (*int64, *int64) { return &c.ID, &c.Version })},
		{http.MethodDelete, "/categories/:categoryId", deleteIfMatch("categoryId", s.store.DeleteCategory)},
		{http.MethodGet, "/store/orders", s.listOrders},
		{http.MethodPost, "/store/orders", keyed(s, false, createFrom(decodeNewOrder, s.store.PlaceOrder), orderPlaced)},
		{http.MethodGet, "/store/orders/:orderId", getByID("orderId", s.store.Order, func(o *store.Order) int64 { return o.Version })},
		{http.MethodPut, "/store/orders/:orderId", s.updateOrder},
		{http.MethodDelete, "/store/orders/:orderId", deleteIfMatch("orderId", s.store.CancelOrder)},
		{http.MethodGet, "/store/inventory", s.listInventory},
		{http.MethodGet, "/store/inventory/:petId", getByID("petId", s.store.InventoryItem, (*store.InventoryItem).Version)},
		{http.MethodPut, "/store/inventory/:petId", s.setInventory},
		{http.MethodGet, "/events", s.events(store.PublicEventKinds)},
	}
	admin := []route{
		{http.MethodGet, "/admin/project", s.getProject},
		{http.MethodPatch, "/admin/project", s.updateProject},
		{http.MethodGet, "/admin/api-keys", listPage(false, s.store.APIKeys)},
		{http.MethodPost, "/admin/api-keys", keyed(s, true, s.createAPIKey, apiKeyCreated)},
		{http.MethodDelete, "/admin/api-keys/:id", deleteByID("id", s.store.RevokeAPIKey)},
		{http.MethodGet, "/admin/domains", s.listDomains},
		{http.MethodPost, "/admin/domains", keyed(s, true, s.addDomain, domainAdded)},
		{http.MethodGet, "/admin/domains/:name", s.getDomain},
		{http.MethodDelete, "/admin/domains/:name", s.removeDomain},
		{http.MethodPost, "/admin/domains/:name/verify", keyed(s, true, s.verifyDomain, domainVerified)},
		{http.MethodGet, "/admin/settings", s.getSettings},
		{http.MethodPut, "/admin/settings", s.updateSettings},
		{http.MethodGet, "/admin/backup", s.backup},
		{http.MethodGet, "/admin/events", s.events(store.AdminEventKinds)},
		{http.MethodGet, "/admin/webhooks", s.listWebhooks},
		{http.MethodPost, "/admin/webhooks", keyed(s, true, createFrom(s.decodeNewWebhook, s.store.CreateWebhook), webhookCreated)},
		{http.MethodGet, "/admin/webhooks/:id", s.getWebhook},
		{http.MethodPatch, "/admin/webhooks/:id", s.updateWebhook},
		{http.MethodDelete, "/admin/webhooks/:id", deleteByID("id", s.store.DeleteWebhook)},
		{http.MethodPost, "/admin/webhooks/:id/rotate-secret", keyed(s, true, s.rotateWebhookSecret, secretRotated)},
		{http.MethodPost, "/admin/webhooks/:id/expire-previous-secret", keyed(s, true, s.expirePreviousSecret, previousSecretExpired)},
		{http.MethodPost, "/admin/webhooks/:id/test", keyed(s, true, s.testWebhook, testRecorded)},
		{http.MethodGet, "/admin/webhooks/:id/deliveries", s.listDeliveries},
		{http.MethodPost, "/admin/webhooks/:id/deliveries/:deliveryId/retry", keyed(s, true, s.retryDelivery, retryScheduled)},
		{http.MethodGet, "/metrics", s.serveMetrics},
	}
	if err := s.register(s.public, public, validate, s.inFlight.limit); err != nil {
		return err
	}
	// The operator's routes are never behind the public cap.
	if err := s.register(s.admin, admin, validate, nil); err != nil {
		return err
	}

	// Outside the API documents.
	e.Match(getHead, "/openapi.yaml", s.serveDoc(s.public.yaml, "application/yaml"), s.inFlight.limit)
	e.Match(getHead, "/openapi.json", s.serveDoc(s.public.json, echo.MIMEApplicationJSON), s.inFlight.limit)
	// guardOperatorPaths asks for the token on both.
	e.Match(getHead, "/admin/openapi.yaml", s.serveDoc(s.admin.yaml, "application/yaml"))
	e.Match(getHead, "/admin/openapi.json", s.serveDoc(s.admin.json, echo.MIMEApplicationJSON))
	e.Match(getHead, "/healthz", s.healthz)
	e.Match(getHead, "/readyz", s.readyz)
	s.siteRoutes()
	return nil
}

// getHead is the methods of a read: HEAD is answered wherever GET is.
var getHead = []string{http.MethodGet, http.MethodHead}

// register adds one OpenAPI document's routes, validated unless validate
// is false, failing when the routes and the operations differ.
func (s *Server) register(doc *apiDoc, routes []route, validate bool, limit echo.MiddlewareFunc) error {
	registered := map[string]bool{}
	for _, r := range routes {
		op, ok := doc.ops[routeKey(r.method, r.path)]
		if !ok {
			return fmt.Errorf("route %s %s is not in the OpenAPI document", r.method, r.path)
		}
		mw := []echo.MiddlewareFunc{wholeSegments}
		if s.cfg.Shared != nil {
			// Only a pool has shares.
			mw = append(mw, poolShare(poolShareOf(r.path)))
		}
		// A body is read whole, within BodyLimit, before anything judges the
		// request; an operation taking none refuses one (400), never 413.
		if op.Operation.RequestBody != nil {
			mw = append(mw, readBody(s.cfg.BodyLimit))
		}
		if limit != nil {
			mw = append(mw, limit)
		}
		if dep, err := s.deprecation(op); err != nil {
			return err
		} else if dep != nil {
			mw = append(mw, dep)
		}
		if validate {
			mw = append(mw, s.validate(op))
		}
		if op.Operation.RequestBody == nil {
			mw = append(mw, refuseBody)
		}
		h := chain(r.handle, mw...)
		methods := []string{r.method}
		if r.method == http.MethodGet {
			// Echo does not add HEAD by itself; net/http drops its body.
			methods = append(methods, http.MethodHead)
		}
		for _, m := range methods {
			s.echo.Add(m, r.path, h)
			s.validated[routeKey(m, r.path)] = validate
		}
		registered[routeKey(r.method, r.path)] = true
	}
	if missing := doc.missing(registered); len(missing) > 0 {
		return fmt.Errorf("operations in the OpenAPI document without a route: %s", strings.Join(missing, ", "))
	}
	return nil
}

// poolShare makes a route's store work count against its resource's share
// of the database connections, so that requests for a locked table cannot
// hold them all (Config.Shared only).
func poolShare(name string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			c.SetRequest(r.WithContext(store.WithPoolShare(r.Context(), name)))
			return next(c)
		}
	}
}

// poolShareOf names a route's resource: the path up to its first
// parameter, two segments at most ("/store/orders").
func poolShareOf(path string) string {
	segments := strings.Split(strings.TrimPrefix(path, "/"), "/")
	n := 0
	for n < len(segments) && n < 2 && !strings.HasPrefix(segments[n], ":") {
		n++
	}
	return "/" + strings.Join(segments[:n], "/")
}

// chain wraps h in mw once, the first outermost: Echo v4 builds every
// request's chain of Add/Use middleware anew, a closure each.
func chain(h echo.HandlerFunc, mw ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// aroundRouted is mw as one global middleware, built once, whose innermost
// handler runs what the router chose.
func aroundRouted(mw ...echo.MiddlewareFunc) echo.MiddlewareFunc {
	h := chain(func(c echo.Context) error { return c.Handler()(c) }, mw...)
	return func(echo.HandlerFunc) echo.HandlerFunc { return h }
}

// wholeSegments answers 404 when a path parameter took in a slash: Echo
// lets a trailing parameter match the rest of the path. It then decodes
// the values, which Echo hands over as the client escaped them: %31 is 1
// (RFC 3986 section 6.2.2.2), to the validator, the handler and the
// successor's Link alike. net/http refused a broken escape already. Echo
// routes on the path as sent only when its escapes are not Go's own
// (RawPath); otherwise on the decoded path, which must not be decoded
// twice (%2531 is the text %31).
func wholeSegments(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		values, raw := c.ParamValues(), c.Request().URL.RawPath != ""
		for i, v := range values {
			if strings.Contains(v, "/") {
				return echo.ErrNotFound
			}
			if u, err := url.PathUnescape(v); err == nil && raw {
				values[i] = u
			}
		}
		return next(c)
	}
}

// refuseBody answers 400 to a body sent to an operation that takes none:
// the client believes it is used. A body of unknown length (chunked) that
// turns out empty is none: some clients frame every request so.
func refuseBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
			data, err := readAtMost(r, 0, http.NewResponseController(c.Response().Writer))
			if err != nil {
				c.Response().Header().Set(echo.HeaderConnection, "close")
				return bodyReadError(err)
			}
			r.ContentLength = int64(len(data))
		}
		if r.ContentLength > 0 {
			// The body is unread, so the connection cannot carry another request.
			c.Response().Header().Set(echo.HeaderConnection, "close")
			return apiError(store.EINVALID, "body: %s %s takes no request body", r.Method, c.Path())
		}
		return next(c)
	}
}

// summaryWindow is how often the log summarizes floods of refusals.
const summaryWindow = time.Minute
