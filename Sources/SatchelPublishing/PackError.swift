import SatchelArchive
import SatchelBundle
import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a pack was refused. Each message is one line that names the file or option at fault; no partial
/// bundle is left behind whichever case is thrown.
public enum PackError: Error, Equatable, Sendable, CustomStringConvertible {
    case sourceMissing(String)
    case sourceNotFolder(String)
    case sourceEmpty(String)
    case unreadable(path: String, errno: Int32)
    case brokenSymlink(path: String)
    case symlinkEscapes(path: String, target: String)
    case symlinkLoop(path: String)
    case notRegularFile(path: String)
    case unsafePath(SafePathError)
    case pathCollision(String, String)
    case reservedName(path: String)
    case entryMissing(String)
    case offlinePageMissing(String)
    case fileChanged(path: String)
    case invalidSourceDateEpoch(String)
    case outputFolder(path: String, errno: Int32)
    case invalidOption(FieldError)
    case manifest(ManifestError)
    /// Past one of ``BundleLimits``: readers would refuse the bundle.
    case limit(BundleLimitError)
    case archive(ArchiveError)

    public var description: String {
        switch self {
        case .sourceMissing(let path): "source folder \(path) does not exist"
        case .sourceNotFolder(let path): "source \(path) is not a folder"
        case .sourceEmpty(let path): "source folder \(path) has no files to pack (after excludes)"
        case .unreadable(let path, let code): "cannot read \(path): \(String(cString: strerror(code)))"
        case .brokenSymlink(let path): "symlink \(path) points to nothing"
        case .symlinkEscapes(let path, let target): "symlink \(path) points outside the source folder (to \(target))"
        case .symlinkLoop(let path): "symlink \(path) leads back into a folder already packed (a loop)"
        case .notRegularFile(let path): "\(path) is not a regular file (device, FIFO or socket)"
        case .unsafePath(let error): "cannot pack \(error)"
        case .pathCollision(let a, let b): "\(a) and \(b) are the same name after NFC and case folding; rename one"
        case .reservedName(let path): "\(path) is reserved for Satchel's own files; rename it or exclude it"
        case .entryMissing(let path): "entry \(path) is not in the source folder"
        case .offlinePageMissing(let path): "offline page \(path) is not in the source folder"
        case .fileChanged(let path): "\(path) changed while it was being packed; pack again"
        case .invalidSourceDateEpoch(let value): "SOURCE_DATE_EPOCH=\(value) is not a whole number of seconds"
        case .outputFolder(let path, let code): "cannot write to output folder \(path): \(String(cString: strerror(code)))"
        case .invalidOption(let error): "\(error)"
        case .manifest(let error): "\(error)"
        case .limit(let error): "cannot pack: \(error)"
        case .archive(let error): "\(error)"
        }
    }
}
