// The step file a device reads before an update (SatchelBundle's StepFile): the prefix, the gzip header, the layout
// it implies and the gzip manifest patch. Whatever the bytes: no crash, a refusal is a typed error, and an accepted
// step is laid out exactly over the input (the patch right after the header, the parts contiguous in header order up
// to the input's last byte), its parts sorted with no content twice, its header surviving its canonical writer, and
// its patch leading from the step's base. An input without the magic is also read as a header's JSON itself, so
// the JSON reader is fuzzed without gzip in the way.
import FuzzDriver
import SatchelBundle
import SatchelCore

@_cdecl("step_main")
public func entry(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 { FuzzDriver.run(argc, argv, fuzz) }

public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    // The prefix alone: a length is given only for the magic, version 1 and a length within the limit.
    let length = try? UpdateStep.headerLength(prefix: bytes)
    if let length {
        require(bytes.count >= UpdateStep.prefixSize, "a length read from \(bytes.count) bytes")
        require(Array(bytes[0..<4]) == UpdateStep.magic && bytes[4] == UpdateStep.formatVersion, "a length read without the magic and version")
        require(length > 0 && length <= UpdateStep.maxCompressedHeaderBytes, "a header length of \(length) accepted")
        require(UpdateStep.prefix(headerLength: length) == Array(bytes[0..<UpdateStep.prefixSize]), "the prefix does not survive its writer")
    }

    // The whole file.
    do throws(StepFileError) {
        let (step, layout, patch) = try StepFile.parse(bytes)
        guard let length else { preconditionFailure("a step parsed whose prefix is refused") }
        let fileSize = Int64(bytes.count)
        require(layout.patch.offset == Int64(UpdateStep.prefixSize + length), "the patch at \(layout.patch.offset), the header has \(length) bytes")
        require(layout.patch.size == step.patchSize, "a patch of \(layout.patch.size) bytes laid out, \(step.patchSize) declared")
        require(layout.parts.count == step.parts.count, "\(layout.parts.count) offsets for \(step.parts.count) parts")
        var end = layout.patch.offset + layout.patch.size
        for (index, part) in step.parts.enumerated() {
            require(layout.parts[index] == end, "part \(index) at \(layout.parts[index]), the previous one ends at \(end)")
            require(part.size >= 0, "part \(index) of \(part.size) bytes")
            end += part.size
            if index > 0 { require(step.parts[index - 1].to < part.to, "part \(index) not after the one before it") }
        }
        require(end == fileSize, "the step ends at \(end), the input at \(fileSize)")
        require((try? step.layout(headerLength: length, fileSize: fileSize)) == layout, "the layout is not the same twice")
        require((try? UpdateStep.decode(step.canonicalBytes)) == step, "a step changed through its canonical bytes")
        require(patch.from.map { $0.version == step.from && $0.contentHash == step.fromContentHash } == true, "the patch does not lead from the step's base")
        require((try? ManifestPatch.decode(patch.canonicalBytes)) == patch, "a patch changed through its canonical bytes")
    } catch {
        if case .io = error { preconditionFailure("a step in memory refused for I/O: \(error)") }
        require(!error.description.isEmpty, "a refusal without a description")
    }

    // Anything without the magic, as the header's JSON: accepted only in canonical form, which survives unchanged.
    if !bytes.starts(with: UpdateStep.magic) {
        do throws(UpdateStepError) {
            let step = try UpdateStep.decode(bytes)
            require(step.canonicalBytes == bytes, "a header accepted in other than its canonical bytes")
            require((try? UpdateStep.decode(step.canonicalBytes)) == step, "a step changed through its canonical bytes")
            for index in step.parts.indices.dropFirst() {
                require(step.parts[index - 1].to < step.parts[index].to, "part \(index) not after the one before it")
            }
        } catch {
            require(!error.description.isEmpty, "a refusal without a description")
        }
    }
    return 0
}
