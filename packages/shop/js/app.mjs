// app.mjs — entry point of Satchel Shop.
//
// 1. load wasm/pricing.wasm (streaming, falling back to an ArrayBuffer),
// 2. fetch api/products.json and render the product list,
// 3. wire up the cart, the promo video and the checkout form,
// 4. mark the document ready: <body data-ready="1">.

import { fetchProducts, assetUrl } from "./api.mjs";
import { Cart, jsPricing, formatCents } from "./cart.mjs";

const WASM_URL = new URL("../wasm/pricing.wasm", import.meta.url);

// Fixed self-check shown in #wasm-result so tests can verify the module ran.
const CHECK_PRICE = 1299;
const CHECK_QTY = 3;
const CHECK_RATE_BP = 800;

const $ = (selector) => document.querySelector(selector);

/**
 * Instantiate pricing.wasm. instantiateStreaming needs the server to send
 * "Content-Type: application/wasm"; if it does not (or the API is missing),
 * fetch the bytes and use WebAssembly.instantiate instead.
 * @returns {Promise<{exports: WebAssembly.Exports, loader: string}>}
 */
export async function loadPricing(url = WASM_URL) {
  if (typeof WebAssembly.instantiateStreaming === "function") {
    try {
      const { instance } = await WebAssembly.instantiateStreaming(fetch(url), {});
      return { exports: instance.exports, loader: "streaming" };
    } catch (err) {
      console.warn("instantiateStreaming failed, falling back to ArrayBuffer:", err);
    }
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`Loading ${url} failed with HTTP ${response.status}`);
  const bytes = await response.arrayBuffer();
  const { instance } = await WebAssembly.instantiate(bytes, {});
  return { exports: instance.exports, loader: "arraybuffer" };
}

function showWasmResult(pricing, loader) {
  const out = $("#wasm-result");
  const total = pricing.total(CHECK_PRICE, CHECK_QTY);
  const withTax = pricing.with_tax(total, CHECK_RATE_BP);
  out.textContent = `total(${CHECK_PRICE}, ${CHECK_QTY}) = ${total} · with_tax(${total}, ${CHECK_RATE_BP}) = ${withTax}`;
  out.dataset.total = String(total);
  out.dataset.withTax = String(withTax);
  out.dataset.loader = loader;
}

function renderProducts(catalogue, cart) {
  const list = $("#product-list");
  const template = $("#product-template");
  const fragment = document.createDocumentFragment();

  for (const product of catalogue.products) {
    const item = template.content.firstElementChild.cloneNode(true);
    item.dataset.id = product.id;
    item.dataset.inStock = String(product.in_stock !== false);

    const img = item.querySelector(".product-image");
    img.src = assetUrl(product.image);
    img.alt = product.name;

    item.querySelector(".product-name").textContent = product.name;
    item.querySelector(".product-description").textContent = product.description || "";
    const price = item.querySelector(".product-price");
    price.textContent = formatCents(product.price_cents, catalogue.currency);
    price.dataset.cents = String(product.price_cents);

    const button = item.querySelector(".add-to-cart");
    button.disabled = product.in_stock === false;
    button.addEventListener("click", () => cart.add(product));

    fragment.append(item);
  }
  list.replaceChildren(fragment);
  list.dataset.count = String(catalogue.products.length);
}

function renderCart(cart) {
  const lines = $("#cart-lines");
  lines.replaceChildren(
    ...cart.lines().map((line) => {
      const li = document.createElement("li");
      li.dataset.id = line.id;
      const label = document.createElement("span");
      label.textContent = `${line.qty} × ${line.name}`;
      const amount = document.createElement("span");
      amount.textContent = cart.format(line.net_cents);
      const remove = document.createElement("button");
      remove.type = "button";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", `Remove ${line.name}`);
      remove.addEventListener("click", () => cart.remove(line.id));
      li.append(label, amount, remove);
      return li;
    }),
  );

  $("#cart-empty").hidden = cart.items.size > 0;
  const count = $("#cart-count");
  count.textContent = String(cart.count);
  count.dataset.count = String(cart.count);

  const { subtotal, tax, total } = cart.summary();
  for (const [id, cents] of [["#cart-subtotal", subtotal], ["#cart-tax", tax], ["#cart-total", total]]) {
    const el = $(id);
    el.textContent = cart.items.size ? cart.format(cents) : "–";
    el.dataset.cents = String(cents);
  }
}

function setupVideo() {
  const video = $("#promo-video");
  if (!video) return;
  video.addEventListener("loadedmetadata", () => {
    video.dataset.duration = video.duration.toFixed(2);
    document.body.dataset.video = "loaded";
  });
  const sources = video.querySelectorAll("source");
  sources[sources.length - 1]?.addEventListener("error", () => {
    document.body.dataset.video = "error";
  });
}

function setupCheckout(cart) {
  const form = $("#checkout-form");
  const status = $("#checkout-status");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.dataset.state = "pending";
    status.textContent = "Placing your order…";
    try {
      const result = await cart.checkout(form);
      status.dataset.state = "ok";
      status.textContent = result.order_id
        ? `Thank you! Order ${result.order_id} is on its way.`
        : "Thank you! Your order has been placed.";
      form.reset();
    } catch (err) {
      status.dataset.state = "error";
      status.textContent = err.message;
    }
  });
}

async function main() {
  document.body.dataset.ready = "0";

  let pricing = jsPricing;
  try {
    const { exports, loader } = await loadPricing();
    pricing = exports;
    showWasmResult(pricing, loader);
    document.body.dataset.wasm = "ok";
  } catch (err) {
    console.error(err);
    const out = $("#wasm-result");
    out.textContent = `pricing.wasm failed to load: ${err.message}`;
    out.dataset.error = "1";
    document.body.dataset.wasm = "error";
  }

  setupVideo();

  const status = $("#products-status");
  try {
    const catalogue = await fetchProducts();
    const cart = new Cart(pricing, { currency: catalogue.currency, taxRateBp: catalogue.tax_rate_bp });
    renderProducts(catalogue, cart);
    cart.addEventListener("change", () => renderCart(cart));
    renderCart(cart);
    setupCheckout(cart);
    status.textContent = `${catalogue.products.length} bags`;
    document.body.dataset.ready = "1";
    // When the page is usable: its products are on screen (tools/bench-pageload reads it).
    performance.mark("products-shown");
  } catch (err) {
    console.error(err);
    status.dataset.state = "error";
    status.innerHTML = "";
    status.append(`Could not load products: ${err.message} `);
    const link = document.createElement("a");
    link.href = assetUrl("offline.html");
    link.textContent = "Are you offline?";
    status.append(link);
    document.body.dataset.ready = "error";
  }
}

main();
