/// How every host names what answered a request, in its log, status page and JSON: one list, so a label cannot
/// be spelled two ways. A loader's ``ResourceLoader/Outcome`` maps to one by the answer's status; the hosts add
/// their own few (an endpoint of theirs, a published file).
public enum AnswerLabel: String, Sendable, Codable, CaseIterable {
    /// A package answered (200, or another success).
    case offlineHit = "offline-hit"
    /// A package answered a conditional request with 304.
    case notModified = "not-modified"
    /// A package answered a range with 206.
    case range
    case network
    case packageAfterNetworkFailure = "package-after-network-failure"
    case offlinePage = "offline-page"
    case error
    /// A body claimed without this launch's proof: nothing was sent upstream.
    case refused
    /// One of the host's own endpoints (`/_satchel/...` on the local server).
    case endpoint = "satchel"
    /// A file of the release folder the local server publishes.
    case published

    public init(_ outcome: ResourceLoader.Outcome, status: Int) {
        switch outcome {
        case .package: self = Self.package(status: status)
        case .network: self = .network
        case .packageAfterNetworkFailure: self = .packageAfterNetworkFailure
        case .offlinePage: self = .offlinePage
        case .error: self = .error
        case .refused: self = .refused
        }
    }

    /// A package's answer by its status.
    public static func package(status: Int) -> AnswerLabel {
        status == 304 ? .notModified : status == 206 ? .range : status < 400 ? .offlineHit : .error
    }
}
