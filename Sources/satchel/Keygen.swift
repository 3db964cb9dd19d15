import ArgumentParser
import Foundation
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Satchel {
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an Ed25519 key pair: DIR/satchel.key (private, mode 0600) and DIR/satchel.pub.")

        @Option(help: "The folder to write the keys into (created when missing).", completion: .directory)
        var output: String

        @Flag(help: "Replace existing key files.")
        var force = false

        func run() throws {
            let key = SigningKey.generate()
            let privatePath = output + "/satchel.key"
            let publicPath = output + "/satchel.pub"
            try Output.failing {
                try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
                if force {
                    unlink(privatePath)
                    unlink(publicPath)
                }
                try write(key.base64, to: privatePath, mode: 0o600)
                try write(key.verifyingKey.base64, to: publicPath, mode: 0o644)
            }
            Output.line("wrote \(privatePath) (keep it secret) and \(publicPath)")
        }

        /// Creates the file exclusively with its final mode, so the private key is never readable by others, not
        /// even for an instant, and an existing key is never silently replaced.
        private func write(_ text: String, to path: String, mode: mode_t) throws {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            guard descriptor >= 0 else {
                let code = errno
                throw KeygenError(message: code == EEXIST
                    ? "\(path) already exists; use --force to replace it"
                    : "cannot create \(path): \(String(cString: strerror(code)))")
            }
            defer { close(descriptor) }
            fchmod(descriptor, mode)
            let bytes = Array(text.utf8)
            if let code = POSIXIO.writeAll(bytes, to: descriptor) ?? Durability.flushToMedia(descriptor) {
                throw KeygenError(message: "cannot write \(path): \(String(cString: strerror(code)))")
            }
        }
    }
}

struct KeygenError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
