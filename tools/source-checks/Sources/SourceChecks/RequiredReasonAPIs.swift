/// Apple's required-reason APIs ("Describing use of required reason API", Bundle Resources documentation):
/// for each `NSPrivacyAccessedAPIType` category, the symbols that put an app or SDK in it, and the reason
/// codes Apple accepts in `NSPrivacyAccessedAPITypeReasons`. The summaries shorten Apple's wording; read the
/// page before choosing a code (most reasons forbid sending the value off the device).
public struct RequiredReasonCategory: Sendable {
    public struct Symbol: Sendable {
        public enum Use: Sendable {
            /// Any use of the name as a value, member or type.
            case reference
            /// Only a call with arguments: the C functions that share their name with a struct (`stat`,
            /// `statfs`, `statvfs`), where `var info = stat()` is the struct and `stat(path, &info)` the call.
            case callWithArguments
        }

        public let name: String
        public let use: Use
    }

    public let key: String
    public let symbols: [Symbol]
    /// Reason code -> Apple's wording, summarised.
    public let reasons: [(code: String, summary: String)]
}

private func names(_ names: String...) -> [RequiredReasonCategory.Symbol] {
    names.map { .init(name: $0, use: .reference) }
}

private func calls(_ names: String...) -> [RequiredReasonCategory.Symbol] {
    names.map { .init(name: $0, use: .callWithArguments) }
}

public let requiredReasonCategories: [RequiredReasonCategory] = [
    RequiredReasonCategory(
        key: "NSPrivacyAccessedAPICategoryFileTimestamp",
        // Apple's list, plus the Objective-C spellings of the same keys.
        symbols: names("creationDate", "modificationDate", "fileModificationDate", "contentModificationDateKey",
                       "creationDateKey", "getattrlist", "getattrlistbulk", "fgetattrlist", "getattrlistat",
                       "fstat", "fstatat", "lstat", "NSFileCreationDate", "NSFileModificationDate",
                       "NSURLContentModificationDateKey", "NSURLCreationDateKey")
            + calls("stat"),
        reasons: [
            ("DDA9.1", "display file timestamps to the person using the device; not sent off the device"),
            ("C617.1", "timestamps, size or other metadata of files inside the app container, app group container or the app's CloudKit container"),
            ("3B52.1", "timestamps, size or other metadata of files or folders the user specifically granted access to (e.g. a document picker)"),
            ("0A2A.1", "third-party SDKs only: a wrapper around file timestamp APIs that the app calls; not for the SDK's own purposes"),
        ]),
    RequiredReasonCategory(
        key: "NSPrivacyAccessedAPICategorySystemBootTime",
        symbols: names("systemUptime", "mach_absolute_time"),
        reasons: [
            ("35F9.1", "measure time elapsed between events in the app, or compute timers; only elapsed time may leave the device"),
            ("8FFB.1", "compute absolute timestamps for events in the app (e.g. UIKit or AVFAudio events)"),
            ("3D61.1", "include boot time in an optional bug report the person chooses to submit, shown to them in the report"),
        ]),
    RequiredReasonCategory(
        key: "NSPrivacyAccessedAPICategoryDiskSpace",
        // Apple lists getattrlist, fgetattrlist and getattrlistat here too, for volume space attributes; the
        // attribute names are what show that use, so they stand for it (the calls count as file timestamps).
        symbols: names("volumeAvailableCapacityKey", "volumeAvailableCapacityForImportantUsageKey",
                       "volumeAvailableCapacityForOpportunisticUsageKey", "volumeTotalCapacityKey",
                       "systemFreeSize", "systemSize", "fstatfs", "fstatvfs",
                       "NSURLVolumeAvailableCapacityKey", "NSURLVolumeAvailableCapacityForImportantUsageKey",
                       "NSURLVolumeAvailableCapacityForOpportunisticUsageKey", "NSURLVolumeTotalCapacityKey",
                       "NSFileSystemFreeSize", "NSFileSystemSize",
                       "ATTR_VOL_SPACEFREE", "ATTR_VOL_SPACEAVAIL", "ATTR_VOL_SPACEUSED", "ATTR_VOL_SIZE")
            + calls("statfs", "statvfs"),
        reasons: [
            ("85F4.1", "display disk space information to the person using the device; not sent off the device"),
            ("E174.1", "check there is enough space to write files, or that space is low so the app can delete files"),
            ("7D9E.1", "include disk space in an optional bug report the person chooses to submit"),
            ("B728.1", "health research apps: tell participants that low disk space affects data collection"),
        ]),
    RequiredReasonCategory(
        key: "NSPrivacyAccessedAPICategoryActiveKeyboards",
        symbols: names("activeInputModes"),
        reasons: [
            ("3EC4.1", "custom keyboard apps: find the keyboards active on the device"),
            ("54BD.1", "present the correct customised user interface for the active keyboards"),
        ]),
    RequiredReasonCategory(
        key: "NSPrivacyAccessedAPICategoryUserDefaults",
        symbols: names("UserDefaults", "NSUserDefaults"),
        reasons: [
            ("CA92.1", "read and write information only the app itself can access"),
            ("1C8F.1", "read and write information shared with the apps, extensions and App Clips of the same App Group"),
            ("C56D.1", "third-party SDKs only: a wrapper around user defaults that the app calls; not for the SDK's own purposes"),
            ("AC6B.1", "read com.apple.configuration.managed (MDM managed app configuration) or write com.apple.feedback.managed"),
        ]),
]
