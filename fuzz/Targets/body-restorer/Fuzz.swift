// BodyRestorer with QueryString and the proofs of origin: whatever a request carries, no crash; a body is
// restored only with a valid proof (the input cannot know the secret, so any restoration means a forgery got
// through); and removing parameters keeps every other one byte for byte.
import FuzzDriver
import SatchelCore

let secret = BodyProofSecret.random()
let check = BodyProofCheck(secret: secret, now: { 1_700_000_000_000 }, claimNonce: { _ in true })

@_cdecl("body_restorer_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // Lines: the URL's query, then header lines "Name: value".
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    let query = lines.first.map(String.init) ?? ""
    var headers = HTTPHeaders()
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers.add(String(line[..<colon]), String(line[line.index(after: colon)...]))
    }
    let request = ResourceRequest(method: "POST", url: "https://h.example/p?" + query, headers: headers)
    let restorer = BodyRestorer()
    if let (_, channel) = try? restorer.restore(request, takeStoredBody: { _ in StoredBody(bytes: [1]) }, proof: check) {
        require(channel == .none, "a body was restored through \(channel) without this launch's proof")
    }
    // Without proofs the decoding rules still hold: a restored request carries no satchel field any more.
    if let (restored, channel) = try? restorer.restore(request, takeStoredBody: { _ in StoredBody(bytes: [1]) }, proof: nil), channel != .none {
        for name in BodyChannels().allHeaders { require(restored.headers[name] == nil, "\(name) survived restoration") }
    }
    var parameters = QueryString(query)
    let before = parameters.text
    parameters.remove("POST_DATA")
    let kept = before.split(separator: "&", omittingEmptySubsequences: false).filter { $0.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0] != "POST_DATA" }
    require(parameters.text == kept.joined(separator: "&"), "removing POST_DATA changed other parameters")
    _ = BodyProof(parsing: Substring(query))
    return 0
}
