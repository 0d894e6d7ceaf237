// Command driver calls every operation of both OpenAPI documents through
// oapi-codegen's default Go clients, as a user would; every answer must
// decode into its status's type. TestGeneratedClients builds it and runs
// it against a real server.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"petstore/handlers/internal/generatedclient/adminapi"
	"petstore/handlers/internal/generatedclient/publicapi"
)

func main() {
	base, key, token := os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_API_KEY"), os.Getenv("PETSTORE_ADMIN_TOKEN")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	httpClient := &http.Client{Timeout: 30 * time.Second}

	api := must(publicapi.NewClientWithResponses(base, publicapi.WithHTTPClient(httpClient),
		publicapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			if r.Method != http.MethodGet {
				r.Header.Set("X-API-Key", key)
			}
			return nil
		})))
	admin := must(adminapi.NewClientWithResponses(base, adminapi.WithHTTPClient(httpClient),
		adminapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+token)
			return nil
		})))

	public(ctx, api)
	operator(ctx, admin)
	if failures > 0 {
		os.Exit(1)
	}
}

func public(ctx context.Context, api *publicapi.ClientWithResponses) {
	desc := "Loyal companions"
	cr := must(api.CreateCategoryWithResponse(ctx, publicapi.NewCategory{Name: "Dogs", Description: &desc}))
	dogs := expect("createCategory", cr, cr.Body, http.StatusCreated, cr.JSON201)
	var dogsID int64 = dogs.Id // a required id is a plain value, not a pointer
	if cr.Headers201 == nil || cr.Headers201.Location == nil {
		fail("createCategory: no Location header parsed")
	}
	cr = must(api.CreateCategoryWithResponse(ctx, publicapi.NewCategory{Name: "Empty"}))
	empty := expect("createCategory", cr, cr.Body, http.StatusCreated, cr.JSON201)

	limit := publicapi.Limit(1)
	lc := must(api.ListCategoriesWithResponse(ctx, &publicapi.ListCategoriesParams{Limit: &limit}))
	if cats := expect("listCategories", lc, lc.Body, http.StatusOK, lc.JSON200); len(cats) != 1 {
		fail("listCategories: %d categories on a page of 1", len(cats))
	}
	if lc.Headers200 == nil || lc.Headers200.Link == nil || !strings.Contains(*lc.Headers200.Link, `rel="next"`) {
		fail("listCategories: no Link to the next page")
	}
	gc := must(api.GetCategoryWithResponse(ctx, dogsID, nil))
	expect("getCategory", gc, gc.Body, http.StatusOK, gc.JSON200)
	rc := must(api.ReplaceCategoryWithResponse(ctx, dogsID, nil, publicapi.NewCategory{Name: "Dogs", Description: &desc}))
	expect("replaceCategory", rc, rc.Body, http.StatusOK, rc.JSON200)

	available := publicapi.Available
	cp := must(api.CreatePetWithResponse(ctx, publicapi.NewPet{Name: "Rex", CategoryId: dogsID, Status: &available}))
	rex := expect("createPet", cp, cp.Body, http.StatusCreated, cp.JSON201)
	var rexID int64 = rex.Id
	if cp.Headers201 == nil || cp.Headers201.Location == nil || *cp.Headers201.Location != fmt.Sprintf("/pets?id=%d", rexID) {
		fail("createPet: Location %v", cp.Headers201)
	}
	lp := must(api.ListPetsWithResponse(ctx, &publicapi.ListPetsParams{Status: &available, CategoryId: &dogsID, Limit: &limit}))
	if pets := expect("listPets", lp, lp.Body, http.StatusOK, lp.JSON200); len(pets) != 1 || pets[0].Name != "Rex" {
		fail("listPets: %+v", pets)
	}
	// The successor of getPetById: the pet's status is a plain value, and
	// its ETag is what If-Match and If-None-Match take.
	lp = must(api.ListPetsWithResponse(ctx, &publicapi.ListPetsParams{Id: &[]int64{rexID}}))
	if pets := expect("listPets", lp, lp.Body, http.StatusOK, lp.JSON200); len(pets) != 1 || pets[0].Id != rexID {
		fail("listPets by id: %+v", pets)
	} else {
		var status publicapi.PetStatus = pets[0].Status
		_ = status
	}
	var rexTag string
	if lp.Headers200 == nil || lp.Headers200.ETag == nil || *lp.Headers200.ETag == "" {
		fail("listPets by one id: no ETag header parsed")
	} else {
		rexTag = *lp.Headers200.ETag
	}
	lp = must(api.ListPetsWithResponse(ctx, &publicapi.ListPetsParams{Id: &[]int64{rexID}, IfNoneMatch: &rexTag}))
	if lp.StatusCode() != http.StatusNotModified {
		fail("listPets by one id with If-None-Match: %d %s", lp.StatusCode(), lp.Body)
	}
	gp := must(api.GetPetByIdWithResponse(ctx, rexID, nil))
	expect("getPetById", gp, gp.Body, http.StatusOK, gp.JSON200)
	if gp.Headers200 == nil || gp.Headers200.Deprecation == nil || gp.Headers200.Sunset == nil {
		fail("getPetById: no Deprecation or Sunset header parsed")
	}
	gp = must(api.GetPetByIdWithResponse(ctx, 999999, nil))
	if e := expect("getPetById", gp, gp.Body, http.StatusNotFound, gp.JSON404); e.Code != publicapi.ErrorCodeNotFound || e.Status != http.StatusNotFound {
		fail("getPetById: error %+v", e)
	}
	pending := publicapi.Pending
	rp := must(api.ReplacePetWithResponse(ctx, rexID, &publicapi.ReplacePetParams{IfMatch: &rexTag}, publicapi.NewPet{Name: "Rex", CategoryId: dogsID, Status: &pending}))
	expect("replacePet", rp, rp.Body, http.StatusOK, rp.JSON200)
	// The same If-Match again is stale now; If-None-Match: * never overwrites.
	rp = must(api.ReplacePetWithResponse(ctx, rexID, &publicapi.ReplacePetParams{IfMatch: &rexTag}, publicapi.NewPet{Name: "Stale", CategoryId: dogsID}))
	if e := expect("replacePet", rp, rp.Body, http.StatusPreconditionFailed, rp.JSON412); e.Code != publicapi.ErrorCodePreconditionFailed {
		fail("replacePet with a stale If-Match: %+v", e)
	}
	anyVersion := "*"
	rp = must(api.ReplacePetWithResponse(ctx, rexID, &publicapi.ReplacePetParams{IfNoneMatch: &anyVersion}, publicapi.NewPet{Name: "Overwrite", CategoryId: dogsID}))
	expect("replacePet", rp, rp.Body, http.StatusPreconditionFailed, rp.JSON412)

	gi := must(api.GetInventoryItemWithResponse(ctx, rexID, nil))
	expect("getInventoryItem", gi, gi.Body, http.StatusOK, gi.JSON200)
	if gi.Headers200 == nil || gi.Headers200.ETag == nil {
		fail("getInventoryItem: no ETag header parsed")
		return
	}
	stockTag := *gi.Headers200.ETag
	si := must(api.SetInventoryWithResponse(ctx, rexID, &publicapi.SetInventoryParams{IfMatch: &stockTag}, publicapi.InventoryUpdate{Quantity: 5}))
	expect("setInventory", si, si.Body, http.StatusOK, si.JSON200)
	si = must(api.SetInventoryWithResponse(ctx, rexID, &publicapi.SetInventoryParams{IfMatch: &stockTag}, publicapi.InventoryUpdate{Quantity: 9}))
	expect("setInventory", si, si.Body, http.StatusPreconditionFailed, si.JSON412)
	gi = must(api.GetInventoryItemWithResponse(ctx, rexID, nil))
	if item := expect("getInventoryItem", gi, gi.Body, http.StatusOK, gi.JSON200); item.Quantity != 5 || item.Status != publicapi.Pending {
		fail("getInventoryItem: %+v", item)
	}
	li := must(api.ListInventoryWithResponse(ctx, &publicapi.ListInventoryParams{Limit: &limit}))
	expect("listInventory", li, li.Body, http.StatusOK, li.JSON200)

	// The README's calls: POST {petId, quantity} and PUT {shipDate, complete}.
	quantity := int32(2)
	po := must(api.PlaceOrderWithResponse(ctx, publicapi.NewOrder{PetId: rexID, Quantity: &quantity}))
	order := expect("placeOrder", po, po.Body, http.StatusCreated, po.JSON201)
	// Always-sent fields are plain values: no nil check, no dereference.
	var orderID int64 = order.Id
	var orderQuantity int32 = order.Quantity
	var orderComplete bool = order.Complete
	if orderID < 1 || orderQuantity != 2 || orderComplete {
		fail("placeOrder: %+v", order)
		return
	}
	complete := false
	lo := must(api.ListOrdersWithResponse(ctx, &publicapi.ListOrdersParams{PetId: &rexID, Complete: &complete, Limit: &limit}))
	expect("listOrders", lo, lo.Body, http.StatusOK, lo.JSON200)
	ship, done := time.Date(2026, 12, 3, 15, 30, 0, 0, time.UTC), true
	uo := must(api.UpdateOrderWithResponse(ctx, order.Id, nil, publicapi.OrderUpdate{ShipDate: &ship, Complete: &done}))
	expect("updateOrder", uo, uo.Body, http.StatusOK, uo.JSON200)
	// What a GET returned may be sent back as it is.
	got := must(api.GetOrderWithResponse(ctx, order.Id, nil))
	read := expect("getOrder", got, got.Body, http.StatusOK, got.JSON200)
	uo = must(api.UpdateOrderWithResponse(ctx, order.Id, nil, publicapi.OrderUpdate{
		PetId: &read.PetId, Quantity: &read.Quantity, ShipDate: read.ShipDate, Complete: &read.Complete,
	}))
	expect("updateOrder", uo, uo.Body, http.StatusOK, uo.JSON200)

	po = must(api.PlaceOrderWithResponse(ctx, publicapi.NewOrder{PetId: rexID}))
	second := expect("placeOrder", po, po.Body, http.StatusCreated, po.JSON201)
	co := must(api.CancelOrderWithResponse(ctx, second.Id, nil))
	expectNoContent("cancelOrder", co, co.Body)
	tooMany := int32(4) // 5 in stock, 2 taken
	po = must(api.PlaceOrderWithResponse(ctx, publicapi.NewOrder{PetId: rexID, Quantity: &tooMany}))
	if e := expect("placeOrder", po, po.Body, http.StatusConflict, po.JSON409); e.Code != publicapi.ErrorCodeInsufficientStock {
		fail("placeOrder: error %+v", e)
	}

	dp := must(api.DeletePetWithResponse(ctx, rexID, nil))
	expectNoContent("deletePet", dp, dp.Body)
	dc := must(api.DeleteCategoryWithResponse(ctx, empty.Id, nil))
	expectNoContent("deleteCategory", dc, dc.Body)

	// Every change above is an event; each decodes into its own type.
	le := must(api.ListEventsWithResponse(ctx, nil))
	events := expect("listEvents", le, le.Body, http.StatusOK, le.JSON200)
	if len(events) == 0 {
		fail("listEvents: no events")
	} else if created, err := events[0].AsCategoryCreatedEvent(); err != nil || created.Data.Name == "" {
		fail("listEvents: the first event as CategoryCreatedEvent: %+v, %v", created, err)
	}
}

func operator(ctx context.Context, admin *adminapi.ClientWithResponses) {
	gp := must(admin.GetProjectWithResponse(ctx))
	project := expect("getProject", gp, gp.Body, http.StatusOK, gp.JSON200)
	pro := adminapi.Pro
	up := must(admin.UpdateProjectWithResponse(ctx, adminapi.ProjectPatch{Plan: &pro}))
	if p := expect("updateProject", up, up.Body, http.StatusOK, up.JSON200); p.Plan != adminapi.Pro {
		fail("updateProject: plan %q", p.Plan)
	}

	ck := must(admin.CreateAPIKeyWithResponse(ctx, adminapi.NewAPIKey{Name: "generated client"}))
	created := expect("createAPIKey", ck, ck.Body, http.StatusCreated, ck.JSON201)
	lk := must(admin.ListAPIKeysWithResponse(ctx, nil))
	expect("listAPIKeys", lk, lk.Body, http.StatusOK, lk.JSON200)
	rk := must(admin.RevokeAPIKeyWithResponse(ctx, created.Id))
	expectNoContent("revokeAPIKey", rk, rk.Body)

	for _, name := range []string{"shop.example.com", "old.example.com"} {
		ad := must(admin.AddDomainWithResponse(ctx, adminapi.NewDomain{Name: name}))
		expect("addDomain", ad, ad.Body, http.StatusCreated, ad.JSON201)
	}
	ad := must(admin.AddDomainWithResponse(ctx, adminapi.NewDomain{Name: "shop.example.com"}))
	if e := expect("addDomain", ad, ad.Body, http.StatusConflict, ad.JSON409); e.Code != adminapi.ErrorCodeDomainExists {
		fail("addDomain: error %+v", e)
	}
	ld := must(admin.ListDomainsWithResponse(ctx, nil))
	expect("listDomains", ld, ld.Body, http.StatusOK, ld.JSON200)
	gd := must(admin.GetDomainWithResponse(ctx, "shop.example.com"))
	expect("getDomain", gd, gd.Body, http.StatusOK, gd.JSON200)
	vd := must(admin.VerifyDomainWithResponse(ctx, "shop.example.com"))
	if d := expect("verifyDomain", vd, vd.Body, http.StatusOK, vd.JSON200); d.Check == nil {
		fail("verifyDomain: no check in %+v", d)
	}

	// Redirect targets must be verified domains or the default address;
	// this server's DNS verifies none.
	primary, moved := project.DefaultAddress, adminapi.N301
	us := must(admin.UpdateSettingsWithResponse(ctx, adminapi.Settings{Domains: adminapi.DomainSettings{
		Primary:   &primary,
		Redirects: &[]adminapi.Redirect{{From: "old.example.com", To: project.DefaultAddress, Status: &moved}},
	}}))
	expect("updateSettings", us, us.Body, http.StatusOK, us.JSON200)
	gs := must(admin.GetSettingsWithResponse(ctx))
	if s := expect("getSettings", gs, gs.Body, http.StatusOK, gs.JSON200); s.Domains.Redirects == nil || len(*s.Domains.Redirects) != 1 {
		fail("getSettings: %+v", s)
	}
	rd := must(admin.RemoveDomainWithResponse(ctx, "old.example.com"))
	expectNoContent("removeDomain", rd, rd.Body)

	bk := must(admin.BackupWithResponse(ctx))
	if bk.StatusCode() != http.StatusOK || len(bk.Body) == 0 {
		fail("backup: %d, %d bytes", bk.StatusCode(), len(bk.Body))
	}
	mt := must(admin.MetricsWithResponse(ctx))
	if mt.StatusCode() != http.StatusOK || !bytes.Contains(mt.Body, []byte("petstore_up 1")) {
		fail("metrics: %d %s", mt.StatusCode(), mt.Body)
	}
	webhooks(ctx, admin)
}

func webhooks(ctx context.Context, admin *adminapi.ClientWithResponses) {
	cw := must(admin.CreateWebhookWithResponse(ctx, adminapi.NewWebhook{
		Url: "https://192.0.2.1/hooks", Events: []adminapi.WebhookEventType{"*"},
	}))
	hook := expect("createWebhook", cw, cw.Body, http.StatusCreated, cw.JSON201)
	if !strings.HasPrefix(hook.Secret, "whsec_") {
		fail("createWebhook: secret %q", hook.Secret)
	}
	lw := must(admin.ListWebhooksWithResponse(ctx, nil))
	expect("listWebhooks", lw, lw.Body, http.StatusOK, lw.JSON200)
	gw := must(admin.GetWebhookWithResponse(ctx, hook.Id))
	expect("getWebhook", gw, gw.Body, http.StatusOK, gw.JSON200)
	desc := "generated client"
	uw := must(admin.UpdateWebhookWithResponse(ctx, hook.Id, adminapi.WebhookPatch{Description: &desc}))
	expect("updateWebhook", uw, uw.Body, http.StatusOK, uw.JSON200)
	rs := must(admin.RotateWebhookSecretWithResponse(ctx, hook.Id))
	rotated := expect("rotateWebhookSecret", rs, rs.Body, http.StatusOK, rs.JSON200)
	if rotated.PreviousSecretExpiresAt == nil {
		fail("rotateWebhookSecret: no previousSecretExpiresAt")
	}
	ep := must(admin.ExpirePreviousWebhookSecretWithResponse(ctx, hook.Id))
	if w := expect("expirePreviousWebhookSecret", ep, ep.Body, http.StatusOK, ep.JSON200); w.PreviousSecretExpiresAt != nil {
		fail("expirePreviousWebhookSecret: previousSecretExpiresAt %v", w.PreviousSecretExpiresAt)
	}
	tw := must(admin.TestWebhookWithResponse(ctx, hook.Id))
	expect("testWebhook", tw, tw.Body, http.StatusAccepted, tw.JSON202)
	ld := must(admin.ListWebhookDeliveriesWithResponse(ctx, hook.Id, nil))
	expect("listWebhookDeliveries", ld, ld.Body, http.StatusOK, ld.JSON200)
	rt := must(admin.RetryWebhookDeliveryWithResponse(ctx, hook.Id, 1<<40))
	expect("retryWebhookDelivery", rt, rt.Body, http.StatusNotFound, rt.JSON404)
	le := must(admin.ListAdminEventsWithResponse(ctx, nil))
	expect("listAdminEvents", le, le.Body, http.StatusOK, le.JSON200)
	dw := must(admin.DeleteWebhookWithResponse(ctx, hook.Id))
	expectNoContent("deleteWebhook", dw, dw.Body)
}

var failures int

func fail(format string, args ...any) {
	failures++
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// must stops at an error of the client itself: it could not send or parse.
func must[R any](r R, err error) R {
	if err != nil {
		_, _, line, _ := runtime.Caller(1)
		fmt.Fprintf(os.Stderr, "driver.go:%d: %v\n", line, err)
		os.Exit(1)
	}
	return r
}

// expect checks the status, that the body parsed into that status's type,
// and that the type holds every member of the body; it returns the value.
func expect[T any](op string, r interface{ StatusCode() int }, body []byte, status int, parsed *T) T {
	var zero T
	if r.StatusCode() != status {
		fail("%s: status %d, want %d: %s", op, r.StatusCode(), status, body)
		return zero
	}
	if parsed == nil {
		fail("%s: the client did not parse the %d answer into %T: %s", op, status, zero, body)
		return zero
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var strict T
	if err := dec.Decode(&strict); err != nil {
		fail("%s: the %d answer does not fit %T: %v: %s", op, status, zero, err, body)
	}
	return *parsed
}

func expectNoContent(op string, r interface{ StatusCode() int }, body []byte) {
	if r.StatusCode() != http.StatusNoContent {
		fail("%s: status %d, want 204: %s", op, r.StatusCode(), body)
	}
}
