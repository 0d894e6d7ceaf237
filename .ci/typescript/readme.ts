// The README's calls, as a TypeScript user writes them with openapi-fetch,
// against the types openapi-typescript generates with its defaults from
// both documents (public.d.ts, admin.d.ts; made by .ci/run, git-ignored).
// tsc fails when a request type cannot be filled as the README shows.
import createClient from "openapi-fetch";
import type { paths } from "./public";
import type { paths as adminPaths, components as adminComponents } from "./admin";

const api = createClient<paths>({ baseUrl: "http://localhost:8080" });
const admin = createClient<adminPaths>({ baseUrl: "http://localhost:8080", headers: { Authorization: "Bearer x" } });
const headers = { "X-API-Key": "k" };

export async function walk() {
  const key = await admin.POST("/admin/api-keys", { body: { name: "walk-through" } });
  const secret: string | undefined = key.data?.secret;
  const cat = await api.POST("/categories", { headers, body: { name: "dogs", description: "Loyal companions" } });
  const catId: number | undefined = cat.data?.id;
  const pet = await api.POST("/pets", { headers, body: { name: "Rex", categoryId: 1 } });
  const petId: number | undefined = pet.data?.id;
  await api.PUT("/store/inventory/{petId}", { headers, params: { path: { petId: 1 } }, body: { quantity: 3 } });
  const order = await api.POST("/store/orders", { headers, body: { petId: 1, quantity: 2 } });
  // Fields every response carries are plain values: no `!`, no `?? fallback`.
  if (order.data) {
    const orderId: number = order.data.id;
    const quantity: number = order.data.quantity;
    const complete: boolean = order.data.complete;
    void [orderId, quantity, complete];
  }
  const read = await api.GET("/pets", { params: { query: { id: [1] } } });
  if (read.data && read.data.length > 0) {
    const status: "available" | "pending" | "sold" = read.data[0].status;
    const petName: string = read.data[0].name;
    void [status, petName];
  }
  await api.PUT("/store/orders/{orderId}", { headers, params: { path: { orderId: 1 } }, body: { shipDate: "2026-12-01T10:00:00Z", complete: true } });
  // What a GET returned may be sent back.
  const got = await api.GET("/store/orders/{orderId}", { params: { path: { orderId: 1 } } });
  if (got.data) {
    const { id, ...rest } = got.data;
    await api.PUT("/store/orders/{orderId}", { headers, params: { path: { orderId: id } }, body: rest });
  }
  await api.GET("/pets", { params: { query: { limit: 1 } } });
  const settings: adminComponents["schemas"]["DomainSettings"] = { primary: "shop.example.com", redirects: [{ from: "old.example.com", to: "shop.example.com", status: 301 }] };
  await admin.PUT("/admin/settings", { body: { domains: settings } });
  const orderId: number | undefined = order.data?.id;
  return [secret, catId, petId, orderId];
}
