import SatchelCore
import SatchelPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file of a zip, as its central directory describes it and its local header confirms.
public struct ZipEntry: Sendable, Equatable {
    public enum Method: Sendable, Equatable {
        case stored
        case deflated
    }

    /// The name exactly as stored (valid UTF-8; not yet checked as a safe path).
    public let name: String
    public let method: Method
    public let crc32: UInt32
    public let compressedSize: Int64
    public let size: Int64
    public let localHeaderOffset: Int64
    /// Where the entry's data starts: after its local header, name and extra field. A stored entry's bytes are
    /// `size` bytes here, as they are, which is what lets a server send them straight from the archive.
    public let dataOffset: Int64
    /// Where its central directory record starts (the writer rewrites the DOS time there).
    let centralHeaderOffset: Int64
}

/// Why a zip's directory was refused. Each case names the entry (or the structure) at fault.
public enum ZipFormatError: Error, Equatable, Sendable, CustomStringConvertible {
    case io(operation: String, path: String, errno: Int32)
    case tooShort(size: Int64)
    case noEndOfCentralDirectory
    case multiDisk
    case badZip64(reason: String)
    case centralDirectoryOutOfBounds(offset: Int64, size: Int64)
    case tooManyEntries(limit: Int)
    case truncatedCentralDirectory(entry: Int)
    case badSignature(what: String, offset: Int64)
    case badName(entry: Int, bytes: [UInt8])
    case duplicateName(String)
    case unsupported(entry: String, feature: String)
    case badExtraField(entry: String, reason: String)
    case notARegularFile(entry: String)
    case inconsistent(entry: String, field: String)
    case outOfBounds(entry: String)
    case overlapping(entry: String, other: String)
    case entryTooLarge(entry: String, limit: Int64)
    case archiveTooLarge(limit: Int64)
    case compressionRatioExceeded(limit: Int)

    public var description: String {
        switch self {
        case .io(let operation, let path, let code): "\(operation) \(path) failed: \(String(cString: strerror(code)))"
        case .tooShort(let size): "zip is \(size) bytes, too short to hold an end of central directory record"
        case .noEndOfCentralDirectory: "zip has no end of central directory record (not a zip, or truncated)"
        case .multiDisk: "zip spans several disks"
        case .badZip64(let reason): "zip64 end of central directory is invalid: \(reason)"
        case .centralDirectoryOutOfBounds(let offset, let size):
            "zip central directory (\(size) bytes at \(offset)) does not end where the end record starts"
        case .tooManyEntries(let limit): "zip has more than \(limit) entries"
        case .truncatedCentralDirectory(let entry): "zip central directory record \(entry) is truncated or does not fill the directory"
        case .badSignature(let what, let offset): "zip \(what) at offset \(offset) has a bad signature"
        case .badName(let entry, let bytes):
            "zip entry \(entry) has a name that is empty, not UTF-8 or holds NUL: \(bytes.prefix(64).map { String($0, radix: 16) }.joined(separator: " "))"
        case .duplicateName(let name): "zip holds \(name.debugDescription) twice"
        case .unsupported(let entry, let feature): "zip entry \(entry.debugDescription) uses \(feature), which bundles never do"
        case .badExtraField(let entry, let reason): "zip entry \(entry.debugDescription) has a bad extra field: \(reason)"
        case .notARegularFile(let entry): "zip entry \(entry.debugDescription) is not a regular file"
        case .inconsistent(let entry, let field): "zip entry \(entry.debugDescription): its local header disagrees with the central directory on \(field)"
        case .outOfBounds(let entry): "zip entry \(entry.debugDescription) lies outside the archive's data"
        case .overlapping(let entry, let other): "zip entries \(entry.debugDescription) and \(other.debugDescription) overlap"
        case .entryTooLarge(let entry, let limit): "zip entry \(entry.debugDescription) is larger than \(limit) bytes"
        case .archiveTooLarge(let limit): "zip expands to more than \(limit) bytes"
        case .compressionRatioExceeded(let limit): "zip expands more than \(limit)x (a decompression bomb?)"
        }
    }

    /// The entry named in the error, when there is one.
    public var entry: String? {
        switch self {
        case .duplicateName(let name), .unsupported(let name, _), .badExtraField(let name, _), .notARegularFile(let name),
            .inconsistent(let name, _), .outOfBounds(let name), .overlapping(let name, _), .entryTooLarge(let name, _):
            name
        default: nil
        }
    }
}

/// A zip's central directory, read strictly: every entry's local header offset, data offset, sizes, method and
/// CRC, ZIP64 included. libarchive streams entries but does not say where their data lies; serving a bundle
/// straight from its archive needs exactly that.
///
/// Strict means anything a bundle never contains is refused, so that what is served is never ambiguous: several
/// disks, encryption, methods other than stored and deflate, folders, links, duplicate names, names that are not
/// UTF-8, extra fields that do not tile their area, a directory that does not end where the end record starts,
/// entries whose local header disagrees with the directory (name, method, flags), entries outside the data area
/// or overlapping each other (the overlapping-entry zip bomb), and sizes past ``ArchiveLimits``.
///
/// The parser reads only through the closure it is given, so it is tested (and fuzzed) on bytes in memory.
public struct ZipDirectory: Sendable {
    /// The entries, in central directory order.
    public let entries: [ZipEntry]
    public let centralDirectoryOffset: Int64

    /// Reads the directory of the zip at `path` (the end records, the directory, each local header).
    public static func read(path: String, limits: ArchiveLimits = .default) throws(ZipFormatError) -> ZipDirectory {
        let file: ZipFile
        do { file = try ZipFile(path: path) } catch {
            guard case .io(let operation, let path, let code) = error else { throw .io(operation: "open", path: path, errno: EIO) }
            throw .io(operation: operation, path: path, errno: code)
        }
        return try read(file, limits: limits)
    }

    /// Reads the directory of a zip already open.
    public static func read(_ file: ZipFile, limits: ArchiveLimits = .default) throws(ZipFormatError) -> ZipDirectory {
        var info = stat()
        guard fstat(file.descriptor, &info) == 0 else { throw .io(operation: "stat", path: file.path, errno: errno) }
        return try parse(size: Int64(info.st_size), limits: limits) { (offset, count) throws(ZipFormatError) in
            try Self.pread(file.descriptor, path: file.path, offset: offset, count: count)
        }
    }

    /// Parses a zip held in memory (tests, fuzzing).
    public static func parse(_ bytes: [UInt8], limits: ArchiveLimits = .default) throws(ZipFormatError) -> ZipDirectory {
        try parse(size: Int64(bytes.count), limits: limits) { (offset, count) throws(ZipFormatError) in
            guard offset >= 0, count >= 0, offset + Int64(count) <= Int64(bytes.count) else { throw .tooShort(size: Int64(bytes.count)) }
            return Array(bytes[Int(offset)..<Int(offset) + count])
        }
    }

    /// Parses a zip of `size` bytes, reading ranges through `read(offset, count)`, which must return exactly
    /// `count` bytes (the parser never asks beyond `size`).
    public static func parse(
        size: Int64, limits: ArchiveLimits = .default, read: (Int64, Int) throws(ZipFormatError) -> [UInt8]
    ) throws(ZipFormatError) -> ZipDirectory {
        let end = try EndRecord.find(size: size, read: read)
        guard end.entryCount <= Int64(limits.maxEntries) else { throw .tooManyEntries(limit: limits.maxEntries) }
        guard end.directoryOffset >= 0, end.directorySize >= 0, end.directoryOffset + end.directorySize == end.recordsStart else {
            throw .centralDirectoryOutOfBounds(offset: end.directoryOffset, size: end.directorySize)
        }
        guard end.directorySize >= end.entryCount * 46 else { throw .truncatedCentralDirectory(entry: 0) }
        let directory = try read(end.directoryOffset, Int(end.directorySize))
        var entries: [ZipEntry] = []
        entries.reserveCapacity(Int(end.entryCount))
        var names = Set<String>()
        var position = 0
        var total: Int64 = 0
        var compressedTotal: Int64 = 0
        for index in 0..<Int(end.entryCount) {
            let record = try CentralRecord.parse(directory, at: &position, index: index, base: end.directoryOffset)
            guard names.insert(record.name).inserted else { throw .duplicateName(record.name) }
            guard record.size <= limits.maxEntryBytes else { throw .entryTooLarge(entry: record.name, limit: limits.maxEntryBytes) }
            total += record.size
            compressedTotal += record.compressedSize
            guard total <= limits.maxTotalBytes else { throw .archiveTooLarge(limit: limits.maxTotalBytes) }
            entries.append(try record.confirmLocalHeader(read: read, dataEnd: end.directoryOffset))
        }
        guard position == directory.count else { throw .truncatedCentralDirectory(entry: Int(end.entryCount)) }
        if total > limits.ratioGraceBytes, total / max(1, compressedTotal) > Int64(limits.maxCompressionRatio) {
            throw .compressionRatioExceeded(limit: limits.maxCompressionRatio)
        }
        // No two entries may share bytes: each one's data ends before the next local header starts.
        let byOffset = entries.sorted { $0.localHeaderOffset < $1.localHeaderOffset }
        for (first, second) in zip(byOffset, byOffset.dropFirst()) where first.dataOffset + first.compressedSize > second.localHeaderOffset {
            throw .overlapping(entry: first.name, other: second.name)
        }
        return ZipDirectory(entries: entries, centralDirectoryOffset: end.directoryOffset)
    }

    /// Where each entry's local header and central directory record start, in directory order, without judging
    /// the entries: the writer corrects the times of archives it has just written, including the hostile ones
    /// tests build (folders, links), which ``parse(size:limits:read:)`` would refuse.
    package static func headerOffsets(
        size: Int64, read: (Int64, Int) throws(ZipFormatError) -> [UInt8]
    ) throws(ZipFormatError) -> [(local: Int64, central: Int64)] {
        let end = try EndRecord.find(size: size, read: read)
        guard end.directoryOffset >= 0, end.directorySize >= 0, end.directoryOffset + end.directorySize == end.recordsStart else {
            throw .centralDirectoryOutOfBounds(offset: end.directoryOffset, size: end.directorySize)
        }
        let directory = try read(end.directoryOffset, Int(end.directorySize))
        var result: [(local: Int64, central: Int64)] = []
        var position = 0
        for index in 0..<Int(end.entryCount) {
            guard position + 46 <= directory.count, directory.u32(position) == centralSignature else { throw .truncatedCentralDirectory(entry: index) }
            let nameLength = Int(directory.u16(position + 28)), extraLength = Int(directory.u16(position + 30))
            let commentLength = Int(directory.u16(position + 32))
            var offset = UInt64(directory.u32(position + 42))
            let extraStart = position + 46 + nameLength
            guard extraStart + extraLength + commentLength <= directory.count else { throw .truncatedCentralDirectory(entry: index) }
            if offset == 0xFFFF_FFFF {
                // The offset is the ZIP64 field's value after the sizes that are also set to all ones.
                var extra = extraStart
                while extra + 4 <= extraStart + extraLength {
                    let id = directory.u16(extra), length = Int(directory.u16(extra + 2))
                    if id == 0x0001 {
                        var field = extra + 4
                        if directory.u32(position + 24) == 0xFFFF_FFFF { field += 8 }
                        if directory.u32(position + 20) == 0xFFFF_FFFF { field += 8 }
                        guard field + 8 <= extra + 4 + length else { throw .badExtraField(entry: "\(index)", reason: "zip64 field too short") }
                        offset = directory.u64(field)
                    }
                    extra += 4 + length
                }
            }
            result.append((Int64(offset), end.directoryOffset + Int64(position)))
            position = extraStart + extraLength + commentLength
        }
        return result
    }

    private static func pread(_ descriptor: Int32, path: String, offset: Int64, count: Int) throws(ZipFormatError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { POSIXIO.readFully(descriptor, into: $0, at: offset) }
        switch result {
        case .failure(let code): throw .io(operation: "read", path: path, errno: code.rawValue)
        case .success(let got) where got < count: throw .io(operation: "read (file shorter than its zip directory says)", path: path, errno: EIO)
        case .success: return bytes
        }
    }
}

// MARK: Records

/// Little-endian field access with bounds already checked by the caller.
private extension Array where Element == UInt8 {
    func u16(_ at: Int) -> UInt16 { UInt16(self[at]) | UInt16(self[at + 1]) << 8 }
    func u32(_ at: Int) -> UInt32 { UInt32(u16(at)) | UInt32(u16(at + 2)) << 16 }
    func u64(_ at: Int) -> UInt64 { UInt64(u32(at)) | UInt64(u32(at + 4)) << 32 }
}

private let endSignature: UInt32 = 0x0605_4B50
private let zip64LocatorSignature: UInt32 = 0x0706_4B50
private let zip64EndSignature: UInt32 = 0x0606_4B50
private let centralSignature: UInt32 = 0x0201_4B50
private let localSignature: UInt32 = 0x0403_4B50

/// The end of central directory record, with the ZIP64 one when present.
private struct EndRecord {
    var entryCount: Int64
    var directorySize: Int64
    var directoryOffset: Int64
    /// Where the end records (ZIP64 end, locator, end) start: the directory must end exactly here.
    var recordsStart: Int64

    static func find(size: Int64, read: (Int64, Int) throws(ZipFormatError) -> [UInt8]) throws(ZipFormatError) -> EndRecord {
        guard size >= 22 else { throw .tooShort(size: size) }
        // The record is 22 bytes plus a comment of at most 65,535 bytes, and must end exactly at the end of the file.
        let tailLength = Int(min(size, 22 + 65_535))
        let tail = try read(size - Int64(tailLength), tailLength)
        var found: Int?
        var candidate = tailLength - 22
        while candidate >= 0 {
            if tail.u32(candidate) == endSignature, Int(tail.u16(candidate + 20)) == tailLength - 22 - candidate {
                found = candidate
                break
            }
            candidate -= 1
        }
        guard let at = found else { throw .noEndOfCentralDirectory }
        let endOffset = size - Int64(tailLength) + Int64(at)
        let disk = tail.u16(at + 4), directoryDisk = tail.u16(at + 6)
        let onDisk = tail.u16(at + 8), total = tail.u16(at + 10)
        let directorySize = tail.u32(at + 12), directoryOffset = tail.u32(at + 16)
        guard disk == 0, directoryDisk == 0, onDisk == total else { throw .multiDisk }
        var record = EndRecord(entryCount: Int64(total), directorySize: Int64(directorySize), directoryOffset: Int64(directoryOffset), recordsStart: endOffset)

        // A ZIP64 locator sits right before the end record; when it is there, its record is the one to believe.
        let needsZip64 = total == 0xFFFF || directorySize == 0xFFFF_FFFF || directoryOffset == 0xFFFF_FFFF
        var hasLocator = false
        if endOffset >= 20 { hasLocator = try read(endOffset - 20, 4).u32(0) == zip64LocatorSignature }
        guard hasLocator else {
            if needsZip64 { throw .badZip64(reason: "the end record needs one and there is no locator") }
            return record
        }
        let locator = try read(endOffset - 20, 20)
        guard locator.u32(4) == 0, locator.u32(16) == 1 else { throw .multiDisk }
        let zip64Offset = Int64(bitPattern: locator.u64(8))
        guard zip64Offset >= 0, zip64Offset + 56 <= endOffset - 20 else { throw .badZip64(reason: "its record lies outside the file") }
        let zip64 = try read(zip64Offset, 56)
        guard zip64.u32(0) == zip64EndSignature else { throw .badSignature(what: "zip64 end of central directory", offset: zip64Offset) }
        // The record size counts what follows its first 12 bytes; it must end at the locator.
        guard Int64(bitPattern: zip64.u64(4)) == endOffset - 20 - zip64Offset - 12 else { throw .badZip64(reason: "its size does not reach the locator") }
        guard zip64.u32(16) == 0, zip64.u32(20) == 0, zip64.u64(24) == zip64.u64(32) else { throw .multiDisk }
        let count64 = zip64.u64(32), size64 = zip64.u64(40), offset64 = zip64.u64(48)
        // The 16- and 32-bit fields must agree with the 64-bit ones or say "see ZIP64".
        guard total == 0xFFFF || UInt64(total) == count64, directorySize == 0xFFFF_FFFF || UInt64(directorySize) == size64,
            directoryOffset == 0xFFFF_FFFF || UInt64(directoryOffset) == offset64,
            count64 <= UInt64(Int64.max), size64 <= UInt64(Int64.max), offset64 <= UInt64(Int64.max)
        else { throw .badZip64(reason: "it disagrees with the end record") }
        record = EndRecord(entryCount: Int64(count64), directorySize: Int64(size64), directoryOffset: Int64(offset64), recordsStart: zip64Offset)
        return record
    }
}

/// One central directory record, parsed and checked on its own.
private struct CentralRecord {
    var name: String
    var nameBytes: ArraySlice<UInt8>
    var flags: UInt16
    var method: ZipEntry.Method
    var crc32: UInt32
    var compressedSize: Int64
    var size: Int64
    var localHeaderOffset: Int64
    var headerOffset: Int64

    /// Flags a bundle entry may carry: deflate speed options (1, 2), sizes after the data (3), UTF-8 name (11).
    static let allowedFlags: UInt16 = 0b0000_1000_0000_1110

    static func parse(_ bytes: [UInt8], at position: inout Int, index: Int, base: Int64) throws(ZipFormatError) -> CentralRecord {
        let start = position
        guard start + 46 <= bytes.count else { throw .truncatedCentralDirectory(entry: index) }
        guard bytes.u32(start) == centralSignature else { throw .badSignature(what: "central directory record \(index)", offset: base + Int64(start)) }
        let madeBy = bytes.u16(start + 4), needed = bytes.u16(start + 6), flags = bytes.u16(start + 8)
        let rawMethod = bytes.u16(start + 10), crc = bytes.u32(start + 16)
        var compressed = UInt64(bytes.u32(start + 20)), size = UInt64(bytes.u32(start + 24))
        let nameLength = Int(bytes.u16(start + 28)), extraLength = Int(bytes.u16(start + 30)), commentLength = Int(bytes.u16(start + 32))
        let diskStart = bytes.u16(start + 34), external = bytes.u32(start + 38)
        var offset = UInt64(bytes.u32(start + 42))
        let nameStart = start + 46
        guard nameStart + nameLength + extraLength + commentLength <= bytes.count else { throw .truncatedCentralDirectory(entry: index) }
        let nameBytes = bytes[nameStart..<nameStart + nameLength]
        guard nameLength > 0, !nameBytes.contains(0), let name = UTF8Text.decode(nameBytes) else {
            throw .badName(entry: index, bytes: Array(nameBytes))
        }
        position = nameStart + nameLength + extraLength + commentLength

        if flags & 0x0001 != 0 || flags & 0x0040 != 0 || flags & 0x2000 != 0 { throw .unsupported(entry: name, feature: "encryption") }
        guard flags & ~allowedFlags == 0 else { throw .unsupported(entry: name, feature: "flags 0x\(String(flags, radix: 16))") }
        guard needed <= 45 else { throw .unsupported(entry: name, feature: "version \(needed) features") }
        let method: ZipEntry.Method
        switch rawMethod {
        case 0: method = .stored
        case 8: method = .deflated
        default: throw .unsupported(entry: name, feature: "compression method \(rawMethod)")
        }
        guard !name.hasSuffix("/") else { throw .notARegularFile(entry: name) }
        // Unix-made entries carry the mode in the high half of the external attributes; only regular files pass.
        if madeBy >> 8 == 3 {
            let type = (external >> 16) & 0o170000
            guard type == 0 || type == 0o100000 else { throw .notARegularFile(entry: name) }
        }

        // ZIP64 extra field: the 64-bit values of exactly the fields set to all ones, in this order.
        var sawZip64 = false
        var seen = Set<UInt16>()
        var extra = nameStart + nameLength
        let extraEnd = extra + extraLength
        while extra < extraEnd {
            guard extra + 4 <= extraEnd else { throw .badExtraField(entry: name, reason: "a field header is cut short") }
            let id = bytes.u16(extra), length = Int(bytes.u16(extra + 2))
            guard extra + 4 + length <= extraEnd else { throw .badExtraField(entry: name, reason: "field 0x\(String(id, radix: 16)) overruns the extra area") }
            guard seen.insert(id).inserted else { throw .badExtraField(entry: name, reason: "field 0x\(String(id, radix: 16)) appears twice") }
            if id == 0x0001 {
                sawZip64 = true
                var field = extra + 4
                let fieldEnd = field + length
                func next() throws(ZipFormatError) -> UInt64 {
                    guard field + 8 <= fieldEnd else { throw .badExtraField(entry: name, reason: "zip64 field too short") }
                    defer { field += 8 }
                    return bytes.u64(field)
                }
                if size == 0xFFFF_FFFF { size = try next() }
                if compressed == 0xFFFF_FFFF { compressed = try next() }
                if offset == 0xFFFF_FFFF { offset = try next() }
                if diskStart == 0xFFFF { field += 4 }
                guard field == fieldEnd else { throw .badExtraField(entry: name, reason: "zip64 field has \(fieldEnd - field) bytes too many or few") }
            }
            extra += 4 + length
        }
        if !sawZip64, size == 0xFFFF_FFFF || compressed == 0xFFFF_FFFF || offset == 0xFFFF_FFFF {
            throw .badExtraField(entry: name, reason: "sizes say zip64 but there is no zip64 field")
        }
        guard diskStart == 0 || (diskStart == 0xFFFF && sawZip64) else { throw .multiDisk }
        guard size <= UInt64(Int64.max), compressed <= UInt64(Int64.max), offset <= UInt64(Int64.max) else { throw .outOfBounds(entry: name) }
        if method == .stored, size != compressed { throw .inconsistent(entry: name, field: "stored size") }
        return CentralRecord(
            name: name, nameBytes: nameBytes, flags: flags, method: method, crc32: crc, compressedSize: Int64(compressed),
            size: Int64(size), localHeaderOffset: Int64(offset), headerOffset: base + Int64(start))
    }

    /// Reads the entry's local header: it must sit inside the data area, name the same file with the same
    /// method and flags, and leave the data inside the data area too.
    func confirmLocalHeader(read: (Int64, Int) throws(ZipFormatError) -> [UInt8], dataEnd: Int64) throws(ZipFormatError) -> ZipEntry {
        // The header and the name it must repeat, in one read (a large bundle has thousands of entries).
        let expectedLength = 30 + nameBytes.count
        guard localHeaderOffset + Int64(expectedLength) <= dataEnd else { throw .outOfBounds(entry: name) }
        let header = try read(localHeaderOffset, expectedLength)
        guard header.u32(0) == localSignature else { throw .badSignature(what: "local header of \(name.debugDescription)", offset: localHeaderOffset) }
        guard header.u16(6) == flags else { throw .inconsistent(entry: name, field: "flags") }
        let method: UInt16 = self.method == .stored ? 0 : 8
        guard header.u16(8) == method else { throw .inconsistent(entry: name, field: "compression method") }
        let nameLength = Int(header.u16(26)), extraLength = Int(header.u16(28))
        guard nameLength == nameBytes.count, header[30...].elementsEqual(nameBytes) else { throw .inconsistent(entry: name, field: "name") }
        let dataOffset = localHeaderOffset + 30 + Int64(nameLength) + Int64(extraLength)
        guard dataOffset + compressedSize <= dataEnd else { throw .outOfBounds(entry: name) }
        return ZipEntry(
            name: name, method: self.method, crc32: crc32, compressedSize: compressedSize, size: size,
            localHeaderOffset: localHeaderOffset, dataOffset: dataOffset, centralHeaderOffset: headerOffset)
    }
}
