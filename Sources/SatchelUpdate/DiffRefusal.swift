import SatchelCore
import SatchelDiff

/// Why a version's diff index, or one file's diff, was not used (docs/formats.md, "Diffs"). Never the update's failure:
/// without the index the update takes objects, as an updater from before diffs does; without a file's diff, that
/// file's object. The outcome reports each (`diffIndexFallback`, `diffRefusals`), as this value: its ``description`` is
/// what `satchel update --json` prints, so a caller that wants the case need not parse the words.
public enum DiffRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// The index could not be downloaded, or is not the size and SHA-256 the catalog lists.
    case indexDownload(UpdateError)
    /// The index is not gzip, or inflates past ``FileDiffIndex/maxBytes``.
    case indexUnreadable(url: String, String)
    case indexMalformed(url: String, FileDiffIndexError)
    /// The index is another package's or version's than the catalog entry naming it.
    case indexMismatch(url: String, catalog: String, index: String)
    /// A diff could not be downloaded, or is not the size and SHA-256 its index lists.
    case download(UpdateError)
    /// The diff refused by its own reader: a header past the limits (window, target, memory), a stream that does not
    /// decode, a copy out of range, an output longer or shorter than declared.
    case format(url: String, FileDiffError)
    /// The diff declares a source of another size than the content the device holds.
    case sourceSize(url: String, declared: Int, held: Int64)
    /// The diff declares a target of another size than the manifest's file.
    case targetSize(url: String, declared: Int, manifest: Int64)
    /// The content the diff starts from could not be read (an installed file gone or cut short, a built-in entry that
    /// does not decode).
    case source(url: String, String)
    /// The diff applied, but its result is not the content the manifest names.
    case result(url: String, expected: String, actual: String)
    /// A step carries no usable part for a content it should make (none, a diff from a content the base lacks, an
    /// object other than the patch's): that file's object is fetched.
    case stepPart(url: String, content: String, String)

    public var description: String {
        switch self {
        case .indexDownload(let error): "diff index: \(error)"
        case .indexUnreadable(let url, let why): "\(url): \(why)"
        case .indexMalformed(let url, let error): "\(url): \(error)"
        case .indexMismatch(let url, let catalog, let index): "\(url) is the diff index of \(index), but the catalog lists it for \(catalog)"
        case .download(let error): "\(error)"
        case .format(let url, let error): "\(url): \(error)"
        case .sourceSize(let url, let declared, let held):
            "\(url) applies to a \(declared)-byte file, but the content it names is \(held) bytes on this device"
        case .targetSize(let url, let declared, let manifest): "\(url) makes \(declared) bytes, but the manifest's file is \(manifest)"
        case .source(let url, let why): "\(url): cannot read the content it applies to: \(why)"
        case .result(let url, let expected, let actual): "\(url) made content \(actual), not \(expected)"
        case .stepPart(let url, let content, let why): "\(url): the part for content \(content) \(why)"
        }
    }
}
