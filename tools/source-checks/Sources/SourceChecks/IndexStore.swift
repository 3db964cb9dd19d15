import CIndexStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One place where a compiled source file uses a symbol, as the compiler resolved it: the symbol is named by its
/// USR, so a local function that shares a library function's name is a different symbol.
public struct SymbolReference: Hashable, Sendable {
    /// The source file, with symbolic links resolved (integrations/apple-typecheck links the real sources).
    public let path: String
    /// The module the file was compiled into.
    public let module: String
    public let line: Int
    /// 1-based, in UTF-8 bytes (what `SourceLocationConverter` takes).
    public let column: Int
    public let usr: String
    public let name: String
    /// Made by the compiler, not written: `for await` calls the iterator's `next`.
    public let isImplicit: Bool

    public init(path: String, module: String, line: Int, column: Int, usr: String, name: String, isImplicit: Bool = false) {
        self.path = path
        self.module = module
        self.line = line
        self.column = column
        self.usr = usr
        self.name = name
        self.isImplicit = isImplicit
    }
}

public struct AvailabilityInputError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The compiler's index store (a debug `swift build` writes one under `.build/<triple>/debug/index/store`), read
/// through the toolchain's own libIndexStore, opened at run time.
public final class IndexStore {
    private let library: LibIndexStore
    private let store: ci_opaque
    public let path: String

    public init(path: String, library libraryPath: String) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw AvailabilityInputError("no index store at \(path): build the package first (a debug swift build writes it)")
        }
        library = try LibIndexStore(path: libraryPath)
        var error: ci_opaque?
        guard let store = library.storeCreate(path, &error) else {
            throw AvailabilityInputError("cannot open the index store at \(path): \(library.describe(error))")
        }
        self.store = store
        self.path = path
    }

    deinit { library.storeDispose(store) }

    /// The toolchain's libIndexStore: next to the `swiftc` found on PATH (`<toolchain>/usr/bin/swiftc` and
    /// `<toolchain>/usr/lib/libIndexStore.so`), so the reader always matches the compiler that wrote the store.
    public static func toolchainLibrary(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        let name = "libIndexStore.so"
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("swiftc")
            guard FileManager.default.isExecutableFile(atPath: candidate.path) else { continue }
            let library = candidate.resolvingSymlinksInPath().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("lib").appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: library.path) { return library.path }
        }
        throw AvailabilityInputError("no \(name) beside a swiftc on PATH")
    }

    /// Every reference (not a declaration) made by source files compiled into `modules`. When the store holds
    /// several units for one file (it keeps units of earlier builds of other configurations), each is read and
    /// the references merged.
    public func references(inModules modules: Set<String>) throws -> [SymbolReference] {
        var found = Set<SymbolReference>()
        for unit in unitNames() {
            var error: ci_opaque?
            guard let reader = library.unitReaderCreate(store, unit, &error) else {
                throw AvailabilityInputError("cannot read unit \(unit) of \(path): \(library.describe(error))")
            }
            defer { library.unitReaderDispose(reader) }
            let module = library.string(library.unitModuleName(reader))
            guard modules.contains(module) else { continue }
            let mainFile = library.string(library.unitMainFile(reader))
            guard !mainFile.isEmpty, FileManager.default.fileExists(atPath: mainFile) else { continue }
            let resolved = URL(fileURLWithPath: mainFile).resolvingSymlinksInPath().path
            for record in recordNames(of: reader, forFile: mainFile) {
                found.formUnion(try references(inRecord: record, path: resolved, module: module))
            }
        }
        return found.sorted { ($0.path, $0.line, $0.column, $0.usr) < ($1.path, $1.line, $1.column, $1.usr) }
    }

    private func unitNames() -> [String] {
        final class Names { var all: [String] = [] }
        let names = Names()
        _ = library.storeUnitsApply(store, 0, Unmanaged.passUnretained(names).toOpaque()) { context, name in
            Unmanaged<Names>.fromOpaque(context!).takeUnretainedValue().all.append(LibIndexStore.decode(name))
            return true
        }
        return names.all
    }

    /// The records (one per source file the unit compiled) a unit depends on whose file is `file`.
    private func recordNames(of unit: ci_opaque, forFile file: String) -> [String] {
        final class Records {
            let library: LibIndexStore
            let file: String
            var names: [String] = []
            init(library: LibIndexStore, file: String) { self.library = library; self.file = file }
        }
        let records = Records(library: library, file: file)
        _ = library.unitDependenciesApply(unit, Unmanaged.passUnretained(records).toOpaque()) { context, dependency in
            let records = Unmanaged<Records>.fromOpaque(context!).takeUnretainedValue()
            let library = records.library
            // INDEXSTORE_UNIT_DEPENDENCY_RECORD
            guard let dependency, library.dependencyKind(dependency) == 2,
                  library.string(library.dependencyFilePath(dependency)) == records.file else { return true }
            records.names.append(library.string(library.dependencyName(dependency)))
            return true
        }
        return records.names
    }

    private func references(inRecord record: String, path: String, module: String) throws -> [SymbolReference] {
        var error: ci_opaque?
        guard let reader = library.recordReaderCreate(store, record, &error) else {
            throw AvailabilityInputError("cannot read record \(record) of \(path): \(library.describe(error))")
        }
        defer { library.recordReaderDispose(reader) }
        final class Occurrences {
            let library: LibIndexStore
            let path: String
            let module: String
            var found: [SymbolReference] = []
            init(library: LibIndexStore, path: String, module: String) {
                self.library = library; self.path = path; self.module = module
            }
        }
        let occurrences = Occurrences(library: library, path: path, module: module)
        _ = library.recordOccurrencesApply(reader, Unmanaged.passUnretained(occurrences).toOpaque()) { context, occurrence in
            let occurrences = Unmanaged<Occurrences>.fromOpaque(context!).takeUnretainedValue()
            let library = occurrences.library
            guard let occurrence else { return true }
            let roles = library.occurrenceRoles(occurrence)
            // A reference, not where something is declared or defined.
            guard roles & SymbolRole.reference != 0, roles & (SymbolRole.declaration | SymbolRole.definition) == 0 else {
                return true
            }
            var line: UInt32 = 0
            var column: UInt32 = 0
            library.occurrenceLineColumn(occurrence, &line, &column)
            guard line > 0, let symbol = library.occurrenceSymbol(occurrence) else { return true }
            occurrences.found.append(SymbolReference(
                path: occurrences.path, module: occurrences.module, line: Int(line), column: Int(column),
                usr: library.string(library.symbolUSR(symbol)), name: library.string(library.symbolName(symbol)),
                isImplicit: roles & SymbolRole.implicit != 0))
            return true
        }
        return occurrences.found
    }
}

/// indexstore_symbol_role_t's bits that matter here.
enum SymbolRole {
    static let declaration: UInt64 = 1 << 0
    static let definition: UInt64 = 1 << 1
    static let reference: UInt64 = 1 << 2
    static let implicit: UInt64 = 1 << 8
}

/// libIndexStore's functions, looked up by name in the toolchain's library.
private final class LibIndexStore {
    let storeCreate: ci_store_create_fn
    let storeDispose: ci_dispose_fn
    let errorDescription: ci_error_get_description_fn
    let errorDispose: ci_dispose_fn
    let storeUnitsApply: ci_store_units_apply_fn
    let unitReaderCreate: ci_reader_create_fn
    let unitReaderDispose: ci_dispose_fn
    let unitModuleName: ci_string_getter_fn
    let unitMainFile: ci_string_getter_fn
    let unitDependenciesApply: ci_apply_fn
    let dependencyKind: ci_dependency_get_kind_fn
    let dependencyName: ci_string_getter_fn
    let dependencyFilePath: ci_string_getter_fn
    let recordReaderCreate: ci_reader_create_fn
    let recordReaderDispose: ci_dispose_fn
    let recordOccurrencesApply: ci_apply_fn
    let occurrenceSymbol: ci_occurrence_get_symbol_fn
    let occurrenceRoles: ci_occurrence_get_roles_fn
    let occurrenceLineColumn: ci_occurrence_get_line_col_fn
    let symbolUSR: ci_string_getter_fn
    let symbolName: ci_string_getter_fn

    init(path: String) throws {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw AvailabilityInputError("cannot open \(path): \(dlerror().map { String(cString: $0) } ?? "unknown error")")
        }
        func function<T>(_ name: String, as type: T.Type) throws -> T {
            guard let symbol = dlsym(handle, name) else { throw AvailabilityInputError("\(path) has no \(name)") }
            return unsafeBitCast(symbol, to: type)
        }
        storeCreate = try function("indexstore_store_create", as: ci_store_create_fn.self)
        storeDispose = try function("indexstore_store_dispose", as: ci_dispose_fn.self)
        errorDescription = try function("indexstore_error_get_description", as: ci_error_get_description_fn.self)
        errorDispose = try function("indexstore_error_dispose", as: ci_dispose_fn.self)
        storeUnitsApply = try function("indexstore_store_units_apply_f", as: ci_store_units_apply_fn.self)
        unitReaderCreate = try function("indexstore_unit_reader_create", as: ci_reader_create_fn.self)
        unitReaderDispose = try function("indexstore_unit_reader_dispose", as: ci_dispose_fn.self)
        unitModuleName = try function("indexstore_unit_reader_get_module_name", as: ci_string_getter_fn.self)
        unitMainFile = try function("indexstore_unit_reader_get_main_file", as: ci_string_getter_fn.self)
        unitDependenciesApply = try function("indexstore_unit_reader_dependencies_apply_f", as: ci_apply_fn.self)
        dependencyKind = try function("indexstore_unit_dependency_get_kind", as: ci_dependency_get_kind_fn.self)
        dependencyName = try function("indexstore_unit_dependency_get_name", as: ci_string_getter_fn.self)
        dependencyFilePath = try function("indexstore_unit_dependency_get_filepath", as: ci_string_getter_fn.self)
        recordReaderCreate = try function("indexstore_record_reader_create", as: ci_reader_create_fn.self)
        recordReaderDispose = try function("indexstore_record_reader_dispose", as: ci_dispose_fn.self)
        recordOccurrencesApply = try function("indexstore_record_reader_occurrences_apply_f", as: ci_apply_fn.self)
        occurrenceSymbol = try function("indexstore_occurrence_get_symbol", as: ci_occurrence_get_symbol_fn.self)
        occurrenceRoles = try function("indexstore_occurrence_get_roles", as: ci_occurrence_get_roles_fn.self)
        occurrenceLineColumn = try function("indexstore_occurrence_get_line_col", as: ci_occurrence_get_line_col_fn.self)
        symbolUSR = try function("indexstore_symbol_get_usr", as: ci_string_getter_fn.self)
        symbolName = try function("indexstore_symbol_get_name", as: ci_string_getter_fn.self)
    }

    func string(_ reference: ci_string_ref) -> String { Self.decode(reference) }

    static func decode(_ reference: ci_string_ref) -> String {
        guard let data = reference.data, reference.length > 0 else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: reference.length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: reference.length), as: UTF8.self)
        }
    }

    func describe(_ error: ci_opaque?) -> String {
        guard let error else { return "no reason given" }
        defer { errorDispose(error) }
        return errorDescription(error).map { String(cString: $0) } ?? "no reason given"
    }
}
