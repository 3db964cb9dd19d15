/// The size limits of every document Satchel reads, in one place: readers refuse a document above its limit before
/// parsing it (the endless-data attack costs at most this much). docs/formats.md's table under "Conventions" states the
/// same figures; `DocumentLimitsTests` reads that table and compares each row with these.
public enum DocumentLimits {
    /// `satchel.json`.
    public static let manifest = 16 << 20
    /// `satchel.sig`, `catalog.json.sig`: one base64 signature.
    public static let legacySignature = 1024
    /// `satchel-delta.json`.
    public static let deltaManifest = 4 << 20
    /// `builtins/<id>.json`, `builtins/<id>.content.json`.
    public static let builtInRecord = 64 << 10
    /// `catalog.json`.
    public static let catalog = 8 << 20
    /// `state.json`, `store.json`.
    public static let storeState = 16 << 20
    /// A version pin file.
    public static let pinFile = 1 << 20
    /// `diffs-<hash>.json.gz`, the diff index, uncompressed.
    public static let diffIndex = 16 << 20
    /// A step file's header (`steps/<id>/<version>/from-<base>-<hash>.step`), uncompressed.
    public static let stepHeader = 16 << 20
    /// `trust/<n>.json`.
    public static let trustDocument = 64 << 10
    /// `catalog.json.sigs`, `<bundle>.sigs`.
    public static let signatureFile = 64 << 10
}
