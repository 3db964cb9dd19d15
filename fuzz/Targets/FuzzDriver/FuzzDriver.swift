// SwiftPM links every executable with its entry point renamed to `<module>_main` (so that tests can link it),
// and a fuzz target has no entry point of its own: each target defines `<module>_main` as a call to `run`,
// which hands control to libFuzzer's driver with the target's test function.

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32
) -> Int32

public func run(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ test: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, test)
}

/// The targets' `precondition`: fuzz targets are release builds, which drop a precondition's message, and a
/// finding must say what broke.
public func require(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) {
    if !condition { fatalError(message(), file: file, line: line) }
}
