import Foundation
import SatchelCore
import SatchelHTTP

/// The page-side half of body restoration: a script injected at document start (a `WKUserScript`, or by
/// `satchel serve --inject-hook`) that rewrites intercepted non-GET requests so that their bodies survive
/// WebKit's hand-over to native code. Only the configuration object varies; the rest is fixed.
///
/// Channels, chosen per request: small text bodies go in a header (`encodeURIComponent`); binary bodies and
/// text above the threshold go to the body store first (the `satchelBody` script message handler in a web
/// view, whose reply acknowledges the store; `POST /_satchel/bodies/<id>` on the local server), and the request
/// carries the id; urlencoded form submissions travel as `POST_DATA` on the action URL when small, through the
/// body store otherwise. GET and HEAD requests and other origins are never touched.
///
/// The script itself is JavaScript in Hook/, one file per feature (``files``), linted with eslint and unit-tested
/// under node by tools/hook-js-test (Tests/hook-js).
public enum HookScript {
    public struct Configuration: Sendable, Equatable {
        public var channels: BodyChannels
        /// Origins whose requests are rewritten, e.g. `https://m.shop.com`, `satchel://m.shop.com`.
        public var origins: [String]
        /// Text bodies whose encoded form is longer than this go to the body store instead of a header.
        public var headerThreshold: Int
        /// Path of the local server's body store endpoint.
        public var bodyEndpoint: String
        /// Name of the web view's script message handler for bodies.
        public var messageHandler: String
        /// The launch's secret, from which the hook makes a ``BodyProof`` for every body it moves; nil makes a
        /// hook without proofs (only for an engine configured with ``BodyProofPolicy/notRequired``).
        public var proofSecret: BodyProofSecret?
        /// Where a custom-scheme page's `document.cookie` is read and written (``PageCookies``); nil: the hook
        /// leaves `document.cookie` alone (a page served over http has the browser's own).
        public var cookieEndpoint: String?
        /// The script message handler of the JS bridge (`window.satchel`); nil: no bridge.
        public var bridgeHandler: String?
        /// How long a bridge call waits for its answer.
        public var bridgeTimeout: Duration
        /// The script message handler the page's health signals go to while a release is on trial (`trial.js`);
        /// nil: none are sent.
        public var trialHandler: String?

        /// Where the local server's body store takes bodies (`POST <endpoint><id>`): the hook posts there and the
        /// server routes it, both from this one value.
        public static let defaultBodyEndpoint = "/_satchel/bodies/"
        /// The web view's script message handler for bodies, unless the app names another.
        public static let defaultMessageHandler = "satchelBody"

        public init(
            channels: BodyChannels = BodyChannels(), origins: [String] = [], headerThreshold: Int = 8 << 10,
            bodyEndpoint: String = Self.defaultBodyEndpoint, messageHandler: String = Self.defaultMessageHandler, proofSecret: BodyProofSecret? = nil,
            cookieEndpoint: String? = nil, bridgeHandler: String? = nil, bridgeTimeout: Duration = .seconds(30), trialHandler: String? = nil
        ) {
            self.trialHandler = trialHandler
            self.cookieEndpoint = cookieEndpoint
            self.bridgeHandler = bridgeHandler
            self.bridgeTimeout = bridgeTimeout
            self.channels = channels
            self.origins = origins
            self.headerThreshold = min(headerThreshold, channels.maxHeaderValueBytes)
            self.bodyEndpoint = bodyEndpoint
            self.messageHandler = messageHandler
            self.proofSecret = proofSecret
        }

        var json: String {
            var object: [String: CanonicalJSON] = [
                "bodyHeader": .string(channels.headerNames.first ?? "X-Satchel-Body"),
                "encodingHeader": .string(channels.encodingHeader),
                "methodHeader": .string(channels.methodHeader),
                "contentTypeHeader": .string(channels.contentTypeHeader),
                "bodyIdHeader": .string(channels.bodyIDHeader),
                "keepaliveHeader": .string(channels.keepaliveHeader),
                "bodyIdParameter": .string(channels.bodyIDParameter),
                "queryParameter": .string(channels.queryParameter),
                "headerThreshold": .integer(Int64(headerThreshold)),
                "origins": .array(origins.map { .string($0) }),
                "bodyEndpoint": .string(bodyEndpoint),
                "messageHandler": .string(messageHandler),
                "proofHeader": .string(channels.proofHeader),
                "proofParameter": .string(channels.proofParameter),
            ]
            if let proofSecret { object["proofSecret"] = .string(proofSecret.text) }
            if let cookieEndpoint {
                object["cookieEndpoint"] = .string(cookieEndpoint)
                object["cookieHeader"] = .string(PageCookies.writeHeader)
            }
            if let bridgeHandler {
                object["bridgeHandler"] = .string(bridgeHandler)
                object["bridgeTimeoutMs"] = .integer(bridgeTimeout.components.seconds * 1000 + bridgeTimeout.components.attoseconds / 1_000_000_000_000_000)
            }
            if let trialHandler { object["trialHandler"] = .string(trialHandler) }
            return String(decoding: CanonicalJSON.object(object).bytes, as: UTF8.self)
        }
    }

    /// The script with `configuration` filled in.
    public static func render(_ configuration: Configuration) -> String {
        script.beforeConfiguration + configuration.json + script.afterConfiguration
    }

    /// The feature files in Hook/ (a resource of this module), in the order they are pasted into wrapper.js, one
    /// closure for all of them: each may use what the files before it declare (its `global` comment lists that),
    /// and the installs must run in this order (cookie.js wraps the fetch and XMLHttpRequest channels.js installs).
    /// Tests/hook-js/hook.js assembles the same files in the same order for the node tests.
    static let files = ["core", "proof", "body", "channels", "forms", "cookie", "trial", "bridge"]

    /// Where wrapper.js takes the features and the configuration object.
    static let featuresSlot = "  // @features\n"
    static let configurationSlot = "SATCHEL_CONFIG"

    /// The rendered script around its configuration object, read from the resource bundle once.
    static let script: (beforeConfiguration: String, afterConfiguration: String) = {
        let wrapper = hookFile("wrapper")
        let features = files.map(hookFile).joined(separator: "\n")
        let around = wrapper.components(separatedBy: featuresSlot)
        guard around.count == 2 else { fatalError("SatchelEngine: Hook/wrapper.js must hold the line \"\(featuresSlot)\" once: the package is broken") }
        let halves = (around[0] + features + around[1]).components(separatedBy: configurationSlot)
        guard halves.count == 2 else { fatalError("SatchelEngine: the hook must name \(configurationSlot) once, in Hook/wrapper.js: the package is broken") }
        return (halves[0], halves[1])
    }()

    /// A file of the hook; a missing one is a broken package, and a hook without it would fail in the page, unseen.
    static func hookFile(_ name: String) -> String {
        guard let url = Bundle.module.url(forResource: name, withExtension: "js", subdirectory: "Hook"),
              let text = try? String(contentsOf: url, encoding: .utf8)
        else { fatalError("SatchelEngine: the hook file Hook/\(name).js is missing from the module's resources: the package is broken") }
        return text
    }
}
