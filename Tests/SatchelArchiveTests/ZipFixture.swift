/// Builds zip files byte by byte, straight from APPNOTE.TXT (PKWARE's specification), so that tests can make
/// the archives a conforming writer never would: every field of every record can be set by hand.
struct ZipFixture {
    struct Entry {
        var name: [UInt8]
        var data: [UInt8]
        /// 0 stored, 8 deflate (then `data` must already be raw deflate and `size` set).
        var method: UInt16 = 0
        var flags: UInt16 = 0
        var size: UInt32?
        var crc: UInt32?
        var madeBy: UInt16 = 3 << 8 | 20
        var versionNeeded: UInt16 = 20
        var externalAttributes: UInt32 = 0o100644 << 16
        var centralExtra: [UInt8] = []
        var localExtra: [UInt8] = []
        /// Overrides for the local header, to make it disagree with the directory.
        var localName: [UInt8]?
        var localMethod: UInt16?
        var localFlags: UInt16?
        /// Writes 0xFFFFFFFF sizes and offset in the directory and a ZIP64 extra field with the real values.
        var zip64 = false
        /// Overrides the local header offset written in the directory.
        var offsetOverride: UInt32?

        init(_ name: String, _ data: [UInt8]) {
            self.name = Array(name.utf8)
            self.data = data
        }
    }

    var entries: [Entry]
    /// Writes a ZIP64 end record and locator, and 0xFFFF/0xFFFFFFFF in the classic end record.
    var zip64End = false
    var comment: [UInt8] = []
    /// Bytes appended after the directory, before the end records.
    var directoryTrailer: [UInt8] = []
    var entryCountOverride: UInt16?
    var diskNumber: UInt16 = 0

    init(_ entries: [Entry]) { self.entries = entries }

    func bytes() -> [UInt8] {
        var out: [UInt8] = []
        var offsets: [Int] = []
        for entry in entries {
            offsets.append(out.count)
            let crc = entry.crc ?? crc32(entry.method == 0 ? entry.data : [])
            let size = entry.size ?? UInt32(entry.data.count)
            let localName = entry.localName ?? entry.name
            out += le32(0x0403_4B50) + le16(entry.versionNeeded) + le16(entry.localFlags ?? entry.flags) + le16(entry.localMethod ?? entry.method)
            out += le16(0) + le16(0x21) + le32(crc) + le32(UInt32(entry.data.count)) + le32(size)
            out += le16(UInt16(localName.count)) + le16(UInt16(entry.localExtra.count)) + localName + entry.localExtra + entry.data
        }
        let directoryStart = out.count
        for (index, entry) in entries.enumerated() {
            let crc = entry.crc ?? crc32(entry.method == 0 ? entry.data : [])
            let size = entry.size ?? UInt32(entry.data.count)
            var extra = entry.centralExtra
            var sizeField = size, compressedField = UInt32(entry.data.count), offsetField = entry.offsetOverride ?? UInt32(offsets[index])
            if entry.zip64 {
                extra += le16(1) + le16(24) + le64(UInt64(size)) + le64(UInt64(entry.data.count)) + le64(UInt64(offsets[index]))
                (sizeField, compressedField, offsetField) = (0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF)
            }
            out += le32(0x0201_4B50) + le16(entry.madeBy) + le16(entry.versionNeeded) + le16(entry.flags) + le16(entry.method)
            out += le16(0) + le16(0x21) + le32(crc) + le32(compressedField) + le32(sizeField)
            out += le16(UInt16(entry.name.count)) + le16(UInt16(extra.count)) + le16(0) + le16(0) + le16(0)
            out += le32(entry.externalAttributes) + le32(offsetField) + entry.name + extra
        }
        out += directoryTrailer
        let directorySize = out.count - directoryStart
        let count = entryCountOverride ?? UInt16(entries.count)
        if zip64End {
            let zip64Start = out.count
            out += le32(0x0606_4B50) + le64(44) + le16(45) + le16(45) + le32(0) + le32(0)
            out += le64(UInt64(count)) + le64(UInt64(count)) + le64(UInt64(directorySize)) + le64(UInt64(directoryStart))
            out += le32(0x0706_4B50) + le32(0) + le64(UInt64(zip64Start)) + le32(1)
            out += le32(0x0605_4B50) + le16(diskNumber) + le16(0) + le16(0xFFFF) + le16(0xFFFF) + le32(0xFFFF_FFFF) + le32(0xFFFF_FFFF)
        } else {
            out += le32(0x0605_4B50) + le16(diskNumber) + le16(0) + le16(count) + le16(count)
            out += le32(UInt32(directorySize)) + le32(UInt32(directoryStart))
        }
        out += le16(UInt16(comment.count)) + comment
        return out
    }
}

func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
func le64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

/// CRC-32 (ISO 3309, the polynomial zip uses), bit by bit: slow and obviously right.
func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}
