/// An open-addressing hash table from a device token (the 16 hex digits of a report, as 64 bits) to a small fixed-size
/// value: the per-device memory of report counting, where a dictionary of strings would cost ten times as much.
/// Linear probing in one array of slots, each a token and its value side by side so a lookup touches one cache line;
/// token 0 lives beside the array, so no token value is needed as a marker.
/// Grows by half when three quarters full (not by doubling, which would leave tables three-quarters empty right after
/// a growth).
final class TokenTable<Value: BitwiseCopyable> {
    private struct Slot {
        var token: UInt64
        var value: Value
    }

    private var slots: UnsafeMutablePointer<Slot>
    private(set) var capacity: Int
    /// Entries in the array, the zero token's excluded.
    private var stored = 0
    private var zero: Value?
    private let empty: Value
    /// Tokens are HMAC outputs, so their bits are already uniform; the odd multiplier only spreads tokens a device
    /// chose on purpose.
    private let seed: UInt64

    init(empty: Value, capacity: Int = 16, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) {
        self.empty = empty
        self.capacity = max(16, capacity)
        self.seed = seed | 1
        slots = .allocate(capacity: self.capacity)
        slots.initialize(repeating: Slot(token: 0, value: empty), count: self.capacity)
    }

    deinit { slots.deallocate() }

    var count: Int { stored + (zero == nil ? 0 : 1) }

    /// Bytes the table holds (its arrays), for memory accounting.
    var bytes: Int { capacity * MemoryLayout<Slot>.stride }

    @inline(__always) private func home(_ token: UInt64) -> Int {
        Int(truncatingIfNeeded: (token &* seed).multipliedFullWidth(by: UInt64(capacity)).high)
    }

    /// Changes the value of `token` (`empty` when new) in place.
    @inline(__always) func update(_ token: UInt64, _ change: (inout Value) -> Void) {
        if token == 0 {
            var value = zero ?? empty
            change(&value)
            zero = value
            return
        }
        var index = home(token)
        while true {
            let found = slots[index].token
            if found == token {
                change(&slots[index].value)
                return
            }
            if found == 0 { break }
            index += 1
            if index == capacity { index = 0 }
        }
        if (stored + 1) * 4 > capacity * 3 {
            grow()
            update(token, change)
            return
        }
        slots[index].token = token
        stored += 1
        change(&slots[index].value)
    }

    /// Loads the token's home slot and returns what it holds: done for every item of a line before any update, so the
    /// cache misses of a large table overlap instead of following one another.
    @inline(__always) func touch(_ token: UInt64) -> UInt64 { slots[home(token)].token }

    func value(_ token: UInt64) -> Value? {
        if token == 0 { return zero }
        var index = home(token)
        while true {
            let found = slots[index].token
            if found == token { return slots[index].value }
            if found == 0 { return nil }
            index += 1
            if index == capacity { index = 0 }
        }
    }

    /// Every entry, in no particular order.
    func forEach(_ body: (UInt64, Value) throws -> Void) rethrows {
        if let zero { try body(0, zero) }
        for index in 0..<capacity where slots[index].token != 0 { try body(slots[index].token, slots[index].value) }
    }

    /// Room for `count` entries without growing, when about that many are coming (a state file being read).
    func reserve(_ count: Int) {
        if count * 4 > capacity * 3 { rehash(to: count * 4 / 3 + 16) }
    }

    private func grow() { rehash(to: capacity + capacity / 2) }

    private func rehash(to newCapacity: Int) {
        let old = slots, oldCapacity = capacity
        capacity = newCapacity
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(token: 0, value: empty), count: capacity)
        for oldIndex in 0..<oldCapacity where old[oldIndex].token != 0 {
            var index = home(old[oldIndex].token)
            while slots[index].token != 0 {
                index += 1
                if index == capacity { index = 0 }
            }
            slots[index] = old[oldIndex]
        }
        old.deallocate()
    }
}
