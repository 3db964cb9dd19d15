import Crypto
import Foundation

/// An Ed25519 private key as Satchel stores it: base64 of the 32-byte raw key (`satchel.key`).
public struct SigningKey: Sendable {
    let key: Curve25519.Signing.PrivateKey

    public static func generate() -> SigningKey { SigningKey(key: Curve25519.Signing.PrivateKey()) }

    init(key: Curve25519.Signing.PrivateKey) { self.key = key }

    /// Parses key-file text; surrounding whitespace (a trailing newline from an editor) is ignored.
    public init(base64 text: String) throws(KeyError) {
        guard let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 32,
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw)
        else { throw .malformed(kind: "private key", reason: "expected base64 of a 32-byte Ed25519 key") }
        self.key = key
    }

    public var base64: String { key.rawRepresentation.base64EncodedString() }
    public var verifyingKey: VerifyingKey { VerifyingKey(key: key.publicKey) }

    /// Signs `message` (the exact bytes of `satchel.json` or `catalog.json`).
    public func signature(for message: [UInt8]) throws -> Signature {
        Signature(bytes: Array(try key.signature(for: message)))
    }
}

/// An Ed25519 public key as Satchel stores it: base64 of the 32-byte raw key (`satchel.pub`).
public struct VerifyingKey: Sendable, Equatable {
    let key: Curve25519.Signing.PublicKey

    init(key: Curve25519.Signing.PublicKey) { self.key = key }

    public init(base64 text: String) throws(KeyError) {
        guard let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 32,
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw)
        else { throw .malformed(kind: "public key", reason: "expected base64 of a 32-byte Ed25519 key") }
        self.key = key
    }

    public var base64: String { key.rawRepresentation.base64EncodedString() }

    public func isValid(_ signature: Signature, for message: [UInt8]) -> Bool {
        key.isValidSignature(signature.bytes, for: message)
    }

    public static func == (lhs: VerifyingKey, rhs: VerifyingKey) -> Bool {
        lhs.key.rawRepresentation == rhs.key.rawRepresentation
    }
}

/// A 64-byte Ed25519 signature; `satchel.sig` holds it as base64 text with no line break.
public struct Signature: Sendable, Hashable {
    public let bytes: [UInt8]

    init(bytes: [UInt8]) { self.bytes = bytes }

    public init(base64 text: String) throws(KeyError) {
        guard let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 64 else {
            throw .malformed(kind: "signature", reason: "expected base64 of 64 bytes")
        }
        bytes = Array(raw)
    }

    public var base64: String { Data(bytes).base64EncodedString() }
}

public enum KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(kind: String, reason: String)

    public var description: String {
        switch self {
        case .malformed(let kind, let reason): "malformed \(kind): \(reason)"
        }
    }
}
