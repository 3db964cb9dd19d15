import SatchelArchive
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A step file read on the device (docs/formats.md, "Steps"): its prefix and header read and checked against the
/// file's size before anything else; the patch and each part are then read from their offsets when the update needs
/// them, one at a time, so what is held at once is the header and one part.
public struct StepFile: Sendable {
    public let path: String
    public let size: Int64
    public let step: UpdateStep
    public let layout: UpdateStep.Layout

    /// Opens the step at `path`: the prefix, the header (inflated within ``UpdateStep/maxHeaderBytes``, read in
    /// canonical form) and the layout it implies, which must end exactly at the file's end.
    public static func open(_ path: String) throws(StepFileError) -> StepFile {
        let descriptor = openForReading(path)
        guard descriptor >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        defer { POSIXIO.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .io(operation: "stat", path: path, errno: errno) }
        let size = Int64(info.st_size)
        let prefix = try read(descriptor, path: path, at: 0, count: min(UpdateStep.prefixSize, Int(max(0, size))))
        let parsed = try header(prefix: prefix, fileSize: size) { offset, count throws(StepFileError) in
            try read(descriptor, path: path, at: offset, count: count)
        }
        return StepFile(path: path, size: size, step: parsed.step, layout: parsed.layout)
    }

    /// The same checks on a whole step held in memory (tests and the fuzz target): the header and layout, then the
    /// patch decoded.
    public static func parse(_ bytes: [UInt8]) throws(StepFileError) -> (step: UpdateStep, layout: UpdateStep.Layout, patch: ManifestPatch) {
        let parsed = try header(prefix: Array(bytes.prefix(UpdateStep.prefixSize)), fileSize: Int64(bytes.count)) { offset, count throws(StepFileError) in
            guard offset >= 0, offset + Int64(count) <= Int64(bytes.count) else { throw .step(.truncated("\(count) bytes at \(offset) are past the end")) }
            return Array(bytes[Int(offset)..<Int(offset) + count])
        }
        let patchBytes = Array(bytes[Int(parsed.layout.patch.offset)..<Int(parsed.layout.patch.offset + parsed.layout.patch.size)])
        return (parsed.step, parsed.layout, try patch(from: patchBytes, of: parsed.step))
    }

    /// The manifest patch the step starts with: inflated within ``ManifestPatch/maxBytes``, read in canonical form, and
    /// from the step's own base.
    public func patch() throws(StepFileError) -> ManifestPatch {
        try Self.patch(from: try bytes(at: layout.patch.offset, count: layout.patch.size), of: step)
    }

    /// The bytes of part `index` (a diff, which the caller bounds by its limits before asking).
    public func bytes(ofPart index: Int) throws(StepFileError) -> [UInt8] {
        try bytes(at: layout.parts[index], count: step.parts[index].size)
    }

    /// Where part `index` is in the file: what an object's bytes are copied from, in place.
    public func range(ofPart index: Int) -> (offset: Int64, size: Int64) { (layout.parts[index], step.parts[index].size) }

    private func bytes(at offset: Int64, count: Int64) throws(StepFileError) -> [UInt8] {
        let descriptor = openForReading(path)
        guard descriptor >= 0 else { throw .io(operation: "open", path: path, errno: errno) }
        defer { POSIXIO.close(descriptor) }
        return try Self.read(descriptor, path: path, at: offset, count: Int(count))
    }

    private static func header(
        prefix: [UInt8], fileSize: Int64, read: (Int64, Int) throws(StepFileError) -> [UInt8]
    ) throws(StepFileError) -> (step: UpdateStep, layout: UpdateStep.Layout) {
        let length: Int
        do { length = try UpdateStep.headerLength(prefix: prefix) } catch { throw .step(error) }
        guard Int64(UpdateStep.prefixSize + length) <= fileSize else {
            throw .step(.truncated("a header of \(length) bytes in a file of \(fileSize)"))
        }
        let json = try inflate(try read(Int64(UpdateStep.prefixSize), length), limit: UpdateStep.maxHeaderBytes, what: "the header")
        do {
            let step = try UpdateStep.decode(json)
            return (step, try step.layout(headerLength: length, fileSize: fileSize))
        } catch {
            throw .step(error)
        }
    }

    private static func patch(from compressed: [UInt8], of step: UpdateStep) throws(StepFileError) -> ManifestPatch {
        let patch: ManifestPatch
        do { patch = try ManifestPatch.decode(try inflate(compressed, limit: ManifestPatch.maxBytes, what: "the patch")) } catch let error as StepFileError {
            throw error
        } catch let error as ManifestPatchError {
            throw .patch(error.description)
        } catch {
            throw .patch("\(error)")
        }
        guard let from = patch.from, from.version == step.from, from.contentHash == step.fromContentHash else {
            throw .patch("the patch leads from \(patch.from.map { "\($0.version)" } ?? "nothing"), the step from \(step.from)")
        }
        return patch
    }

    /// One gzip member inflated, refused as soon as it passes `limit` (a bomb stops at the bound).
    static func inflate(_ compressed: [UInt8], limit: Int, what: String) throws(StepFileError) -> [UInt8] {
        var output: [UInt8] = []
        do {
            let reader = try GunzipReader { chunk in
                guard output.count + chunk.count <= limit else { throw StepFileError.tooLarge(what, limit: limit) }
                output.append(contentsOf: chunk)
            }
            try compressed.withUnsafeBytes { try reader.write($0) }
            try reader.finish()
        } catch let error as StepFileError {
            throw error
        } catch {
            throw .notGzip(what, "\(error)")
        }
        return output
    }

    private static func read(_ descriptor: Int32, path: String, at offset: Int64, count: Int) throws(StepFileError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { POSIXIO.readFully(descriptor, into: $0, at: offset) }
        switch result {
        case .failure(let code): throw .io(operation: "read", path: path, errno: code.rawValue)
        case .success(let got):
            guard got == count else { throw .step(.truncated("\(count) bytes at \(offset), the file has \(got)")) }
        }
        return bytes
    }

}

/// `open(2)` read-only, close-on-exec (a name of its own: inside ``StepFile`` `open` is the type's own function).
private func openForReading(_ path: String) -> Int32 { open(path, O_RDONLY | O_CLOEXEC) }

public enum StepFileError: Error, Equatable, Sendable, CustomStringConvertible {
    case step(UpdateStepError)
    case io(operation: String, path: String, errno: Int32)
    case notGzip(String, String)
    case tooLarge(String, limit: Int)
    case patch(String)

    public var description: String {
        switch self {
        case .step(let error): error.description
        case .io(let operation, let path, let code): "cannot \(operation) \(path): \(String(cString: strerror(code)))"
        case .notGzip(let what, let why): "\(what) of the step is not gzip: \(why)"
        case .tooLarge(let what, let limit): "\(what) of the step inflates past \(limit) bytes"
        case .patch(let why): "the step's manifest patch: \(why)"
        }
    }
}
