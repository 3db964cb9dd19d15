import SatchelBundle
import SatchelCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a bundle's files into a fresh staging folder as ``BundleReader`` streams them. The reader has
/// already checked each name with ``SafePath`` and matched it to the manifest, and it checks size and hash
/// before calling ``end(_:)``; the sink only has to create what it is given, never following a link and never
/// replacing an existing file.
final class StagingSink: BundleFileSink {
    let root: String
    private var descriptor: Int32 = -1
    private var currentPath = ""
    private var folders = Set<String>()
    /// Every file and folder created, for the durability step where `syncfs` is missing (Apple platforms): files
    /// written here and files a delta links or copies in alike, and their folders.
    private(set) var createdEntries: [String] = []
    private var filesWritten = 0
    /// After this many files the test-only "extract" checkpoint fires, half-way through.
    private let checkpointAfter: Int

    /// Asked before each file: an error stops the install there (the store was suspended, decision 0037).
    private let interrupted: () -> StoreError?

    init(root: String, fileCount: Int, interrupted: @escaping () -> StoreError? = { nil }) {
        self.root = root
        checkpointAfter = max(1, fileCount / 2)
        self.interrupted = interrupted
    }

    func begin(_ file: FileRecord) throws {
        currentPath = try prepare(file)
        descriptor = open(currentPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw StoreError.system("create", currentPath) }
    }

    /// Creates the file's parent folders and returns where it goes, recording both for the durability step.
    /// A delta install calls this for the files it links or copies from the base, which never pass through
    /// ``begin(_:)``; recording here is what makes those durable too.
    func prepare(_ file: FileRecord) throws(StoreError) -> String {
        if let error = interrupted() { throw error }
        for folder in file.path.parentFolders where folders.insert(folder).inserted {
            try FileSystem.makeDirectory(root + "/" + folder)
            createdEntries.append(root + "/" + folder)
        }
        let path = root + "/" + file.path.value
        createdEntries.append(path)
        return path
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        try FileSystem.writeAll(descriptor, chunk, path: currentPath)
    }

    func end(_ file: FileRecord) throws {
        let status = close(descriptor)
        descriptor = -1
        guard status == 0 else { throw StoreError.system("close", currentPath) }
        filesWritten += 1
        if filesWritten == checkpointAfter { FaultInjection.checkpoint("extract") }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }
}
