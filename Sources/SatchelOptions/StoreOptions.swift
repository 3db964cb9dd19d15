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

    @Option(help: "Launches a trial may have before the next launch rolls it back.")
    public var maxTrialLaunches: Int = 3

    @Option(
        name: .customLong("built-in"),
        help: "A built-in bundle (a zip shipped with the app), or a folder of them (repeatable): served from the archive as the floor under its package.",
        completion: .file())
    public var builtIns: [String] = []

    public init() {}

    /// The store's configuration; a key file that cannot be read or parsed is a usage error naming it.
    public func configuration() throws -> StoreConfiguration {
        var keys: [VerifyingKey] = []
        for path in publicKeys {
            do { keys.append(try VerifyingKey(base64: try KeyFile.read(path, option: "--public-key"))) } catch let error as KeyError {
                throw ValidationError("--public-key \(path): \(error)")
            }
        }
        return StoreConfiguration(trustedKeys: keys, maxTrialLaunches: maxTrialLaunches, builtIns: builtIns)
    }

    /// Opens (and recovers) the store.
    /// - Throws: `ValidationError` for a bad key file, ``StoreError`` for the store itself.
    public func open() throws -> PackageStore {
        let configuration = try configuration()
        return try PackageStore(root: store, configuration: configuration)
    }
}

/// Key files named on a command line (`--public-key`, `--sign-key`).
public enum KeyFile {
    /// Reads a key file, turning any failure into a usage error that names the file.
    public static func read(_ path: String, option: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read \(option) file \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
