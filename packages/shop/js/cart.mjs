// cart.mjs — cart state for Satchel Shop.
//
// Money is handled as integer cents. The arithmetic is delegated to a
// "pricing" object with the same exports as wasm/pricing.wasm
// (total, tax, with_tax, line_total), so the WebAssembly module is the single
// source of truth for totals.

import { submitCheckout } from "./api.mjs";

const STORAGE_KEY = "satchel-shop.cart.v1";

/** Pure-JS stand-in with the same signatures, used only if wasm fails. */
export const jsPricing = Object.freeze({
  total: (price, qty) => (price * qty) | 0,
  tax: (amount, rateBp) => Math.floor((amount * rateBp + 5000) / 10000),
  with_tax: (amount, rateBp) => amount + Math.floor((amount * rateBp + 5000) / 10000),
  line_total: (price, qty, rateBp) => {
    const net = price * qty;
    return net + Math.floor((net * rateBp + 5000) / 10000);
  },
});

export function formatCents(cents, currency = "EUR") {
  try {
    return new Intl.NumberFormat(document.documentElement.lang || "en", {
      style: "currency",
      currency,
    }).format(cents / 100);
  } catch {
    return `${(cents / 100).toFixed(2)} ${currency}`;
  }
}

export class Cart extends EventTarget {
  /**
   * @param {{total: Function, tax: Function}} pricing
   * @param {{currency?: string, taxRateBp?: number}} options
   */
  constructor(pricing, { currency = "EUR", taxRateBp = 0 } = {}) {
    super();
    this.pricing = pricing;
    this.currency = currency;
    this.taxRateBp = taxRateBp;
    /** @type {Map<string, {id: string, name: string, price_cents: number, qty: number}>} */
    this.items = new Map();
    this.#restore();
  }

  add(product, qty = 1) {
    const line = this.items.get(product.id);
    if (line) {
      line.qty += qty;
    } else {
      this.items.set(product.id, {
        id: product.id,
        name: product.name,
        price_cents: product.price_cents,
        qty,
      });
    }
    this.#changed();
  }

  remove(id) {
    if (this.items.delete(id)) this.#changed();
  }

  clear() {
    this.items.clear();
    this.#changed();
  }

  get count() {
    let n = 0;
    for (const line of this.items.values()) n += line.qty;
    return n;
  }

  lines() {
    return [...this.items.values()].map((line) => ({
      ...line,
      net_cents: this.pricing.total(line.price_cents, line.qty),
    }));
  }

  summary() {
    let subtotal = 0;
    for (const line of this.lines()) subtotal += line.net_cents;
    const tax = this.pricing.tax(subtotal, this.taxRateBp);
    return { subtotal, tax, total: subtotal + tax };
  }

  format(cents) {
    return formatCents(cents, this.currency);
  }

  /** Post the cart together with the checkout form. */
  async checkout(form) {
    if (this.items.size === 0) {
      throw new Error("Your cart is empty — add a bag first.");
    }
    const field = form.elements.namedItem("cart");
    if (field) {
      field.value = JSON.stringify(this.lines().map(({ id, qty }) => ({ id, qty })));
    }
    const result = await submitCheckout(form);
    this.clear();
    return result;
  }

  #changed() {
    try {
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify([...this.items.values()]));
    } catch {
      /* storage may be unavailable in some web views */
    }
    this.dispatchEvent(new Event("change"));
  }

  #restore() {
    try {
      const saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "[]");
      for (const line of saved) {
        if (line && typeof line.id === "string" && Number.isInteger(line.qty)) {
          this.items.set(line.id, line);
        }
      }
    } catch {
      /* ignore corrupt or unavailable storage */
    }
  }
}
