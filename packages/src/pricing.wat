;; pricing.wat — integer price arithmetic for Satchel Shop.
;;
;; All amounts are in cents (i32). Tax rates are in basis points
;; (1 bp = 0.01 %, so 800 = 8 %). Rounding is half-up.
;;
;; Build: wat2wasm packages/src/pricing.wat -o packages/shop/wasm/pricing.wasm
(module
  ;; total(price_cents, qty) -> price_cents * qty
  (func $total (export "total") (param $price i32) (param $qty i32) (result i32)
    (i32.mul (local.get $price) (local.get $qty)))

  ;; tax(amount_cents, rate_bp) -> round(amount * rate / 10000)
  ;; Computed in i64 so large carts cannot overflow the intermediate product.
  (func $tax (export "tax") (param $amount i32) (param $rate_bp i32) (result i32)
    (i32.wrap_i64
      (i64.div_u
        (i64.add
          (i64.mul (i64.extend_i32_u (local.get $amount))
                   (i64.extend_i32_u (local.get $rate_bp)))
          (i64.const 5000))
        (i64.const 10000))))

  ;; with_tax(amount_cents, rate_bp) -> amount + tax(amount, rate_bp)
  (func (export "with_tax") (param $amount i32) (param $rate_bp i32) (result i32)
    (i32.add (local.get $amount)
             (call $tax (local.get $amount) (local.get $rate_bp))))

  ;; line_total(price_cents, qty, rate_bp) -> total incl. tax for one cart line
  (func (export "line_total") (param $price i32) (param $qty i32) (param $rate_bp i32) (result i32)
    (local $net i32)
    (local.set $net (call $total (local.get $price) (local.get $qty)))
    (i32.add (local.get $net)
             (call $tax (local.get $net) (local.get $rate_bp))))
)
