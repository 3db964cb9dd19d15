// api.mjs — network access for Satchel Shop.
//
// Every URL is resolved against the app root, which is derived from this
// module's own URL (js/api.mjs -> ../). That keeps the app working whether it
// is served at "/", under a prefix such as "/shop/", or from a custom scheme
// inside a web view, without hard-coding any absolute path.

export const APP_ROOT = new URL("../", import.meta.url);

/** Resolve a path from products.json (e.g. "img/products/x.png") to a URL. */
export function assetUrl(path) {
  return new URL(path, APP_ROOT).href;
}

export class ApiError extends Error {
  constructor(message, status = 0) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

async function getJSON(path) {
  let response;
  try {
    response = await fetch(assetUrl(path), { headers: { Accept: "application/json" } });
  } catch (err) {
    throw new ApiError(`Network error while loading ${path}: ${err.message}`);
  }
  if (!response.ok) {
    throw new ApiError(`Loading ${path} failed with HTTP ${response.status}`, response.status);
  }
  return response.json();
}

/**
 * Load the product catalogue. The bundle ships a static stub at
 * api/products.json; a live deployment can answer the same path.
 * @returns {Promise<{currency: string, tax_rate_bp: number, products: object[]}>}
 */
export async function fetchProducts() {
  const data = await getJSON("api/products.json");
  if (!data || !Array.isArray(data.products)) {
    throw new ApiError("api/products.json has no products array");
  }
  return data;
}

/**
 * Send the checkout form to its action (a server endpoint, not part of the
 * bundle), encoded exactly like a native form post.
 * @param {HTMLFormElement} form
 */
export async function submitCheckout(form) {
  const body = new URLSearchParams(new FormData(form));
  let response;
  try {
    response = await fetch(form.action, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded;charset=UTF-8" },
      body,
    });
  } catch (err) {
    throw new ApiError("You appear to be offline. Your cart is kept until you retry.");
  }
  if (!response.ok) {
    throw new ApiError(`Checkout is not available right now (HTTP ${response.status}).`, response.status);
  }
  const type = response.headers.get("Content-Type") || "";
  return type.includes("json") ? response.json() : { ok: true };
}
