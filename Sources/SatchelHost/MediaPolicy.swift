/// How pages may play media, set once for every view before it is created (WebKit reads it only then: 004 §2.8.2).
public struct MediaPolicy: Sendable, Equatable {
    public enum Autoplay: String, Sendable, Equatable, CaseIterable {
        /// Any media starts by itself.
        case allowed
        /// Muted media (and media without sound) starts by itself; with sound it waits for a gesture (browsers' rule).
        case muted
        /// Nothing starts without a gesture.
        case never
    }

    public var autoplay: Autoplay
    /// Video plays inline in the page instead of full screen (iOS; other platforms always play inline).
    public var inlinePlayback: Bool

    public init(autoplay: Autoplay = .muted, inlinePlayback: Bool = true) {
        self.autoplay = autoplay
        self.inlinePlayback = inlinePlayback
    }
}
