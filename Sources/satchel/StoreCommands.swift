import ArgumentParser
import Foundation
import SatchelBundle
import SatchelCore
import SatchelOptions
import SatchelStore

extension StoreOptions {
    /// Opens the store for a command: a store error is printed as one line and exits 1. A built-in bundle that
    /// was refused is a warning (the store still serves everything valid); `satchel check` fails on it.
    func openForCommand() throws -> PackageStore {
        let configuration = try configuration()
        let opened = try Output.failing { () throws(StoreError) in try PackageStore(root: store, configuration: configuration) }
        for refusal in opened.builtInRefusals { Output.warning(refusal.description) }
        return opened
    }
}


func parseID(_ raw: String) throws -> PackageID {
    do { return try PackageID(raw) } catch { throw ValidationError(error.description) }
}

func parseVersion(_ raw: String) throws -> SemanticVersion {
    do { return try SemanticVersion(raw) } catch { throw ValidationError(error.description) }
}

extension Satchel {
    struct Install: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify a bundle and install it as the active version of its package, on trial.",
            discussion: """
                Nothing is visible until the bundle is verified, extracted, hashed and durable; the previous version stays. \
                With --root-public-key, the keyed signatures in <bundle>.sigs beside the bundle count with its satchel.sig \
                toward the bundles role's threshold.
                """)

        @Argument(help: "The bundle (.zip or .tar.gz).", completion: .file())
        var bundle: String
        @OptionGroup var options: StoreOptions
        @Option(help: "The bundle's expected SHA-256 (hex), checked before anything else.")
        var sha256: String?
        @Flag(help: "Print one JSON object.")
        var json = false

        func run() throws {
            let store = try options.openForCommand()
            let signatures = try Self.signatures(beside: bundle)
            // An explicit install may bring back a version that failed here before.
            let result = try Output.failing { () throws(StoreError) in
                try store.install(bundle: bundle, expectedSHA256: sha256, retryingFailed: true, signatures: signatures)
            }
            if json {
                Output.json(result)
            } else if result.builtIn == true {
                Output.line("\(result.id) \(result.version) is the app's built-in version: nothing extracted, the built-in serves")
            } else {
                let previous = result.previous.map { ", previous \($0) kept" } ?? ""
                let delta = result.delta.map { ", from the delta over \($0.from) (\($0.written) written, \($0.linked) linked, \($0.copied) copied)" } ?? ""
                Output.line("installed \(result.id) \(result.version) (trial), \(result.fileCount) files, \(Output.bytes(result.bytes))\(delta)\(previous)")
            }
        }

        /// The keyed signatures of `<bundle>.sigs` (docs/formats.md, "Threshold signatures"), as `satchel sign` and
        /// `satchel pack` write it: none without the file, or when it was made for another manifest (said on stderr).
        static func signatures(beside bundle: String) throws -> [KeyedSignature] {
            let path = bundle + SignatureFile.suffix
            guard let data = FileManager.default.contents(atPath: path) else { return [] }
            let file: SignatureFile
            do { file = try SignatureFile.decode(Array(data)) } catch { throw Output.failure("\(path) \(error)") }
            guard let manifest = try? BundleReader(path: bundle).manifestBytes, file.covers(manifest) else {
                if (try? BundleReader(path: bundle)) != nil { Output.warning("\(path) was made for another manifest than \(bundle)'s: not counted") }
                return []
            }
            return file.signatures
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List installed packages: active version, state, scope, size.")
        @OptionGroup var options: StoreOptions
        @Flag(help: "Print a JSON array.")
        var json = false

        func run() throws {
            let store = try options.openForCommand()
            let packages = try Output.failing { () throws(StoreError) in try store.list() }
            if json { return Output.json(packages) }
            if packages.isEmpty { return Output.line("no packages installed in \(options.store)") }
            for package in packages {
                let others = package.otherVersions.isEmpty ? "" : "; also installed: " + package.otherVersions.joined(separator: ", ")
                let state = switch package.state {
                case .trial: " (trial, \(package.launches) launches)"
                case .builtIn: " (built-in, from \(package.builtInBundle ?? "?"))"
                case .missing: " (its files are missing: a built-in this command was not given?)"
                case .confirmed: ""
                }
                let floor = package.builtIn.map { package.state == .builtIn ? "" : "; built-in \($0)" } ?? ""
                let fallback = package.fallback.map { "; falls back to \($0)" } ?? ""
                let failed = package.failed.isEmpty ? "" : "; failed: " + package.failed.joined(separator: ", ")
                Output.line("\(package.id) \(package.active)\(state): \(package.hosts.joined(separator: ", ")) \(package.pathPrefix), \(package.fileCount) files, \(Output.bytes(package.bytes))\(fallback)\(others)\(floor)\(failed)")
            }
        }
    }

    struct Activate: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make an installed version active (a version never confirmed starts a trial).")
        @Argument(help: "Package id.") var id: String
        @Argument(help: "Installed version.") var version: String
        @OptionGroup var options: StoreOptions

        func run() throws {
            let (id, version) = (try parseID(id), try parseVersion(version))
            let store = try options.openForCommand()
            try Output.failing { () throws(StoreError) in try store.activate(id, version) }
            Output.line("\(id) \(version) is active")
        }
    }

    struct Confirm: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Confirm the active trial: it becomes the version to fall back to.")
        @Argument(help: "Package id.") var id: String
        @OptionGroup var options: StoreOptions

        func run() throws {
            let id = try parseID(id)
            let store = try options.openForCommand()
            let state = try Output.failing { () throws(StoreError) in try store.confirm(id) }
            Output.line("\(id) \(state.active) confirmed")
        }
    }

    struct Rollback: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Return to the version served before the active one (confirmed, or superseded on trial), else the built-in; the active one is marked failed.")
        @Argument(help: "Package id.") var id: String
        @OptionGroup var options: StoreOptions

        func run() throws {
            let id = try parseID(id)
            let store = try options.openForCommand()
            let state = try Output.failing { () throws(StoreError) in try store.rollback(id) }
            let builtIn = store.builtInPackages.contains { $0.id == id && $0.version == state.active } ? " (built-in)" : ""
            Output.line("\(id) rolled back to \(state.active)\(builtIn)")
        }
    }

    struct Launch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count a launch that shows the app's pages: trials past their launch limit roll back to their confirmed version.")
        @OptionGroup var options: StoreOptions
        @Flag(help: "Print one JSON object.")
        var json = false

        func run() throws {
            let store = try options.openForCommand()
            let report = try Output.failing { () throws(StoreError) in try store.beginLaunch() }
            if json { return Output.json(report) }
            for rollback in report.rolledBack { Output.line("\(rollback.id): trial \(rollback.from) was never confirmed; rolled back to \(rollback.to)") }
            for (id, launches) in report.trials.sorted(by: { $0.key < $1.key }) { Output.line("\(id): trial launch \(launches) of \(options.maxTrialLaunches)") }
            for id in report.exhaustedWithoutFallback { Output.line("\(id): trial is past its launches and there is nothing to fall back to; marked failed, still served") }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an installed version (not the active one, its fallback or the newest confirmed one), or the whole package.")
        @Argument(help: "Package id.") var id: String
        @Option(help: "Only this (inactive) version.") var version: String?
        @OptionGroup var options: StoreOptions

        func run() throws {
            let id = try parseID(id)
            let version = try version.map(parseVersion)
            let store = try options.openForCommand()
            try Output.failing { () throws(StoreError) in try store.remove(id, version: version) }
            Output.line(version.map { "removed \(id) \($0)" } ?? "removed \(id)")
        }
    }

    struct GC: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gc",
            abstract: "Remove versions that are not active, the fallback, the newest confirmed one or pinned by a running engine; failed ones go too.")
        @OptionGroup var options: StoreOptions
        @Option(help: "Keep this many more of the most recent versions that served.") var keep: Int = 0
        @Flag(help: "Print one JSON object.") var json = false

        func validate() throws {
            guard keep >= 0 else { throw ValidationError("--keep must not be negative") }
        }

        func run() throws {
            let store = try options.openForCommand()
            let removed = try Output.failing { () throws(StoreError) in try store.collectGarbage(keep: keep) }
            if json { return Output.json(["removed": removed]) }
            Output.line(removed.isEmpty ? "nothing to remove" : "removed " + removed.joined(separator: ", "))
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-verify every active file against its manifest.", discussion: "Exit 0 when all match, 1 when any differs.")
        @OptionGroup var options: StoreOptions
        @Flag(help: "Print one JSON object.") var json = false

        func run() throws {
            let store = try options.openForCommand()
            let problems = try Output.failing { () throws(StoreError) in try store.check() }
            if json {
                struct Report: Encodable { let ok: Bool; let problems: [CheckProblem] }
                Output.json(Report(ok: problems.isEmpty, problems: problems))
            } else {
                let refusals = Dictionary(store.builtInRefusals.map { ($0.bundle, $0.description) }) { first, _ in first }
                let lines = problems.map { $0.kind == .builtInRefused ? refusals[$0.path] ?? $0.description : $0.description }
                Output.line(problems.isEmpty ? "ok: every active file matches its manifest" : lines.joined(separator: "\n"))
            }
            if !problems.isEmpty { throw ExitCode.failure }
        }
    }
}
