import Foundation

/// A snapshot of a view as the app gets it (004: a WebGL canvas comes out blank from the platform's snapshot call,
/// whose compositor copy cannot read the page's GL buffer): the platform's PNG when it shows something, else the
/// page's own pixels through the bridge (its handler ``pageHandler`` answers a `data:image/png;base64,` URL), else the
/// platform's blank one, said so.
public enum Snapshots {
    /// The bridge handler a page registers (`window.satchel.handle('snapshot', () => canvas.toDataURL())`).
    public static let pageHandler = "snapshot"

    public enum Source: String, Sendable, Equatable {
        case platform, page
    }

    /// Whether `pixels` (4 bytes each, any channel order) are all one color: nothing was drawn.
    public static func isBlank(_ pixels: UnsafeRawBufferPointer) -> Bool {
        guard pixels.count >= 4 else { return true }
        let first = pixels.load(as: UInt32.self)
        var offset = 4
        while offset + 4 <= pixels.count {
            if pixels.loadUnaligned(fromByteOffset: offset, as: UInt32.self) != first { return false }
            offset += 4
        }
        return true
    }

    /// The PNG a page answered, from its `data:image/png;base64,…` URL; nil for anything else.
    public static func png(fromDataURL text: String) -> Data? {
        let prefix = "data:image/png;base64,"
        guard text.hasPrefix(prefix), let data = Data(base64Encoded: String(text.dropFirst(prefix.count))),
            data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        else { return nil }
        return data
    }
}
