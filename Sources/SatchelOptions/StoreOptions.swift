import ArgumentParser
import Foundation
import SatchelCore
import SatchelStore

/// `--store` and what a store is opened with, shared by every command that opens one (the `satchel` store
/// commands, `satchel serve`, and the WebKitGTK viewer in `integrations/`), so the flags mean the same everywhere.
public struct StoreOptions: ParsableArguments {
    @Option(help: "The store folder (created when missing).", completion: .directory)
    public var store: String

    @Option(name: .customLong("public-key"), help: "A trusted Ed25519 public key file (repeatable); bundles must then be signed by one.", completion: .file())
    public var publicKeys: [String] = []

    @Option(
        name: .customLong("root-public-key"),
        help: ArgumentHelp(
            "A root Ed25519 public key the app ships (repeatable): bundles and catalogs are then checked against the trust documents trust/<n>.json the updater walks from them (docs/formats.md, \"Trust\").",
            valueName: "file"),
        completion: .file())
    public var rootPublicKeys: [String] = []

    @Option(help: "Launches that show pages a trial may have before the next one rolls it back.")
    public var maxTrialLaunches: Int = 3

    @Option(
        name: .customLong("built-in"),
        help: "A built-in bundle (a zip shipped with the app), or a folder of them (repeatable): served from the archive as the floor under its package.",
        completion: .file())
    public var builtIns: [String] = []

    public init() {}

    /// The store's configuration; a key file that cannot be read or parsed is a usage error naming it.
    public func configuration() throws -> StoreConfiguration {
        let keys = try publicKeys.map { try KeyFile.verifyingKey($0) }
        let roots = try rootPublicKeys.map { try KeyFile.verifyingKey($0, option: "--root-public-key") }
        // The roots of trust version 1, any one of them signing for version 1 (which needs its own threshold too).
        let anchor = roots.isEmpty ? nil : try TrustAnchor(rootKeys: roots)
        return StoreConfiguration(trustedKeys: keys, maxTrialLaunches: maxTrialLaunches, builtIns: builtIns, trustAnchor: anchor)
    }

    /// Opens (and recovers) the store.
    /// - Throws: `ValidationError` for a bad key file, ``StoreError`` for the store itself.
    public func open() throws -> PackageStore {
        let configuration = try configuration()
        return try PackageStore(root: store, configuration: configuration)
    }
}

/// Key files named on a command line (`--public-key`, `--sign-key`): any failure to read or parse one is a usage
/// error that names the option and the file.
public enum KeyFile {
    public static func verifyingKey(_ path: String, option: String = "--public-key") throws -> VerifyingKey {
        try parse(path, option: option) { text throws(KeyError) in try VerifyingKey(base64: text) }
    }

    public static func signingKey(_ path: String, option: String = "--sign-key") throws -> SigningKey {
        try parse(path, option: option) { text throws(KeyError) in try SigningKey(base64: text) }
    }

    private static func parse<Key>(_ path: String, option: String, _ make: (String) throws(KeyError) -> Key) throws -> Key {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read \(option) file \(path)")
        }
        do { return try make(String(decoding: data, as: UTF8.self)) } catch { throw ValidationError("\(option) \(path): \(error)") }
    }
}
