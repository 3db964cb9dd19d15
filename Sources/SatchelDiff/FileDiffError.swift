/// Why a file diff was refused. Every case names the numbers at fault; `description` is one line a CLI prints as is.
/// Nothing is written anywhere before a refusal: `FileDiff.apply` returns the target or throws.
public enum FileDiffError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The first four bytes are not `SDIF`.
    case badMagic
    /// A version this decoder does not read (it reads 1).
    case unsupportedVersion(UInt8)
    /// The diff ends inside a header field, at `offset` (its length).
    case truncated(field: String, offset: Int)
    /// A header varint longer than 10 bytes, above 2^63 - 1, or not in its shortest form, starting at `offset`.
    case malformedVarint(field: String, offset: Int)
    /// A stream's encoding byte is neither 0 (stored) nor 1 (deflate).
    case unknownStreamEncoding(stream: FileDiffStream, encoding: UInt8)
    /// The streams' encoded sizes add up to `declared` bytes, but `actual` bytes follow the header.
    case streamBytesMismatch(declared: Int, actual: Int)
    /// The source handed to `apply` is not the size the diff was made from.
    case sourceSizeMismatch(declared: Int, actual: Int)
    /// The declared source (the window copies read from) is past the limit for this target.
    case windowTooLarge(sourceSize: Int, limit: Int)
    /// The declared target is past the limit.
    case targetTooLarge(targetSize: Int, limit: Int)
    /// Source, target and decoded streams together would take more memory than the limit.
    case memoryTooLarge(needed: Int, limit: Int)
    /// A deflated stream zlib refuses, that ends early, or that inflates to another size than declared.
    case corruptStream(stream: FileDiffStream, reason: String)
    /// Instruction `instruction` (counted from 0) reads past the end of a stream.
    case streamExhausted(stream: FileDiffStream, instruction: Int)
    /// A varint inside a stream is longer than 10 bytes, above 2^63 - 1, or not in its shortest form.
    case malformedStreamVarint(stream: FileDiffStream, instruction: Int)
    /// Bytes left in a stream once every instruction has run.
    case unusedStreamBytes(stream: FileDiffStream, count: Int)
    /// An operation code this version does not define.
    case unknownOperation(code: UInt8, instruction: Int)
    /// A copy reads outside what it may read: the source, or the target written so far. `start` is where it would
    /// start (in the source, or in the target for a copy from the target), `available` the bytes it may read from.
    case copyOutOfRange(instruction: Int, start: Int, length: Int, available: Int)
    /// Instruction `instruction` would write past the declared target size.
    case targetLongerThanDeclared(declared: Int, instruction: Int)
    /// Every instruction and literal ran, and the target is shorter than declared.
    case targetShorterThanDeclared(declared: Int, actual: Int)

    public var description: String {
        switch self {
        case .badMagic:
            return "not a file diff: it does not start with SDIF"
        case .unsupportedVersion(let version):
            return "file diff version \(version) is not supported (this reader knows version \(FileDiffFormat.version))"
        case .truncated(let field, let offset):
            return "the file diff ends inside its \(field) (at byte \(offset))"
        case .malformedVarint(let field, let offset):
            return "the file diff's \(field) at byte \(offset) is not a valid varint"
        case .unknownStreamEncoding(let stream, let encoding):
            return "the file diff's \(stream) stream has unknown encoding \(encoding)"
        case .streamBytesMismatch(let declared, let actual):
            return "the file diff's streams declare \(declared) bytes but \(actual) follow its header"
        case .sourceSizeMismatch(let declared, let actual):
            return "the file diff was made from a \(declared)-byte source, not this \(actual)-byte one"
        case .windowTooLarge(let sourceSize, let limit):
            return "the file diff's \(sourceSize)-byte source is past the window limit of \(limit) bytes"
        case .targetTooLarge(let targetSize, let limit):
            return "the file diff's \(targetSize)-byte target is past the limit of \(limit) bytes"
        case .memoryTooLarge(let needed, let limit):
            return "the file diff needs \(needed) bytes of memory, past the limit of \(limit)"
        case .corruptStream(let stream, let reason):
            return "the file diff's \(stream) stream is corrupt: \(reason)"
        case .streamExhausted(let stream, let instruction):
            return "instruction \(instruction) of the file diff reads past the end of its \(stream) stream"
        case .malformedStreamVarint(let stream, let instruction):
            return "instruction \(instruction) of the file diff reads an invalid varint from its \(stream) stream"
        case .unusedStreamBytes(let stream, let count):
            return "the file diff's \(stream) stream has \(count) bytes no instruction reads"
        case .unknownOperation(let code, let instruction):
            return "instruction \(instruction) of the file diff has unknown operation \(code)"
        case .copyOutOfRange(let instruction, let start, let length, let available):
            return "instruction \(instruction) of the file diff copies \(length) bytes from \(start), outside the \(available) bytes it may read"
        case .targetLongerThanDeclared(let declared, let instruction):
            return "instruction \(instruction) of the file diff writes past its declared \(declared)-byte target"
        case .targetShorterThanDeclared(let declared, let actual):
            return "the file diff makes \(actual) bytes, not its declared \(declared)"
        }
    }
}
