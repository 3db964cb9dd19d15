import SwiftSyntax

/// A Linux-only API: what to look for in active code, and why a Darwin build would not compile it.
public struct LinuxOnlyRule: Sendable {
    public enum Pattern: Sendable {
        /// An identifier used as a value, function, member or type, spelled exactly so.
        case name(String)
        /// Any identifier so used that starts with this.
        case prefix(String)
        /// A module: `import M`, and any qualified use `M.symbol`.
        case module(String)
        /// A string literal that starts with this text.
        case literalPrefix(String)
    }

    public let pattern: Pattern
    public let reason: String
}

/// The Linux-only APIs, with the reason each is not on Darwin. One table, so a new rule is one line.
public let linuxOnlyRules: [LinuxOnlyRule] = [
    .init(pattern: .module("Glibc"), reason: "the GNU C library module; Apple platforms import Darwin"),
    .init(pattern: .module("Musl"), reason: "the musl C library module; Apple platforms import Darwin"),
    .init(pattern: .module("FoundationNetworking"), reason: "swift-corelibs-foundation's networking module; on Apple platforms URLSession is in Foundation"),
    .init(pattern: .name("st_mtim"), reason: "Darwin's stat has st_mtimespec"),
    .init(pattern: .name("st_atim"), reason: "Darwin's stat has st_atimespec"),
    .init(pattern: .name("st_ctim"), reason: "Darwin's stat has st_ctimespec"),
    .init(pattern: .name("syncfs"), reason: "a Linux system call; Darwin has fsync and fcntl(F_FULLFSYNC)"),
    .init(pattern: .name("O_TMPFILE"), reason: "a Linux open flag; Darwin has no unnamed temporary files"),
    .init(pattern: .name("sendfile"), reason: "Darwin's sendfile has another signature: socket only, length in and out, header/trailer vectors"),
    .init(pattern: .prefix("epoll_"), reason: "Linux event polling; Darwin has kqueue"),
    .init(pattern: .prefix("EPOLL"), reason: "Linux event polling flags; Darwin has kqueue"),
    .init(pattern: .prefix("inotify"), reason: "Linux file watching; Darwin has FSEvents and kqueue"),
    .init(pattern: .literalPrefix("/proc/"), reason: "procfs does not exist on Darwin"),
    .init(pattern: .name("SOCK_NONBLOCK"), reason: "a Linux socket type flag; Darwin sets O_NONBLOCK with fcntl"),
    .init(pattern: .name("SOCK_CLOEXEC"), reason: "a Linux socket type flag; Darwin sets FD_CLOEXEC with fcntl"),
    .init(pattern: .name("pipe2"), reason: "Linux only; Darwin has pipe and fcntl"),
    .init(pattern: .name("accept4"), reason: "Linux only; Darwin has accept and fcntl"),
    .init(pattern: .name("memfd_create"), reason: "Linux anonymous files; Darwin has none"),
    .init(pattern: .name("fallocate"), reason: "Linux only; Darwin preallocates with fcntl(F_PREALLOCATE)"),
    .init(pattern: .name("posix_fadvise"), reason: "not in Darwin's libc; Darwin has fcntl(F_RDADVISE)"),
    .init(pattern: .name("sched_getaffinity"), reason: "Linux CPU affinity; Darwin has no such call"),
    .init(pattern: .name("prctl"), reason: "Linux process control; Darwin has no such call"),
    .init(pattern: .prefix("mallinfo"), reason: "glibc heap statistics; Darwin has malloc_zone_statistics"),
    .init(pattern: .name("malloc_usable_size"), reason: "glibc; Darwin has malloc_size"),
    .init(pattern: .prefix("get_nprocs"), reason: "glibc; Darwin has sysctl hw.ncpu and ProcessInfo.activeProcessorCount"),
    .init(pattern: .name("__errno_location"), reason: "glibc's errno accessor; Darwin has __error"),
    .init(pattern: .name("MSG_NOSIGNAL"), reason: "a Linux send flag; Darwin sets SO_NOSIGPIPE on the socket"),
    .init(pattern: .prefix("F_OFD_"), reason: "Linux open-file-description locks; Darwin has flock and F_SETLK"),
    .init(pattern: .name("statx"), reason: "Linux extended stat; Darwin has stat and getattrlist"),
    .init(pattern: .name("copy_file_range"), reason: "Linux only; Darwin has copyfile, fcopyfile and clonefile"),
    .init(pattern: .name("splice"), reason: "Linux pipe splicing; Darwin has no such call"),
    .init(pattern: .prefix("timerfd"), reason: "Linux timer descriptors; Darwin has kqueue EVFILT_TIMER"),
    .init(pattern: .prefix("eventfd"), reason: "Linux event descriptors; Darwin has kqueue EVFILT_USER"),
    .init(pattern: .prefix("signalfd"), reason: "Linux signal descriptors; Darwin has kqueue EVFILT_SIGNAL"),
]

/// One use of a Linux-only API in code that some Apple configuration compiles.
public struct PlatformFinding: Equatable, Sendable {
    public let path: String
    public let line: Int
    public let column: Int
    /// What was used, as written: `st_mtim`, `Glibc.write`, `import Glibc`, `"/proc/self/fd"`.
    public let api: String
    public let reason: String
    /// The configurations that compile this line.
    public var configurations: [String]

    public var description: String {
        "\(path):\(line):\(column): \(api) is Linux-only (\(reason)), compiled for \(configurations.joined(separator: ", "))"
    }
}

public struct PlatformReport: Sendable {
    public var findings: [PlatformFinding] = []
    /// `#if` conditions that could not be evaluated: the scan of that file is not trustworthy.
    public var problems: [String] = []
    public var fileCount = 0
    public var configurationCount = 0

    public var summary: String {
        "\(fileCount) files, \(configurationCount) configurations, no Linux-only API"
    }
}

public enum PlatformScan {
    public static func scan(_ files: [SourceFile], configurations: [AppleBuildConfiguration] = AppleBuildConfiguration.all) -> PlatformReport {
        var report = PlatformReport(fileCount: files.count, configurationCount: configurations.count)
        for file in files {
            var byPosition: [Int: PlatformFinding] = [:]
            for configuration in configurations {
                let (tokens, problems) = file.activeTokens(under: configuration)
                report.problems += problems.map { "\($0) (\(configuration.name))" }
                for token in tokens {
                    guard let (api, reason) = match(token) else { continue }
                    let offset = token.positionAfterSkippingLeadingTrivia.utf8Offset
                    if byPosition[offset] != nil {
                        byPosition[offset]!.configurations.append(configuration.name)
                    } else {
                        let at = file.location(of: token)
                        byPosition[offset] = PlatformFinding(
                            path: file.path, line: at.line, column: at.column, api: api, reason: reason,
                            configurations: [configuration.name])
                    }
                }
            }
            report.findings += byPosition.sorted { $0.key < $1.key }.map(\.value)
        }
        return report
    }

    /// The rule a token breaks, and how to name what it used; nil if it breaks none.
    static func match(_ token: TokenSyntax) -> (api: String, reason: String)? {
        if case .stringSegment = token.tokenKind {
            guard let text = token.leadingStringSegment else { return nil }
            for rule in linuxOnlyRules {
                if case .literalPrefix(let prefix) = rule.pattern, text.hasPrefix(prefix) { return ("\"\(text)\"", rule.reason) }
            }
            return nil
        }
        guard let name = token.identifierName else { return nil }
        for rule in linuxOnlyRules {
            switch rule.pattern {
            case .module(let module) where name == module:
                if token.isImportedModule { return ("import \(module)", rule.reason) }
                if token.isReference { return (token.memberAfterDot.map { "\(module).\($0)" } ?? module, rule.reason) }
            case .name(let exact) where name == exact:
                if token.isReference { return (name, rule.reason) }
            case .prefix(let prefix) where name.hasPrefix(prefix):
                if token.isReference { return (name, rule.reason) }
            default:
                continue
            }
        }
        return nil
    }
}
