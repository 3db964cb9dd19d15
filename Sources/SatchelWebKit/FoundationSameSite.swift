import SatchelCore

/// A cookie's SameSite as Foundation's `HTTPCookie` holds it on Apple platforms, both ways. Apple documents an
/// `HTTPCookie` whose `sameSitePolicy` is nil as sent with cross-site requests: no policy means None. Foundation has no
/// value for None itself, so None is written as no policy and no policy reads back as None; a cookie that gave no
/// SameSite attribute is written as Lax, how the jar enforces it.
public enum FoundationSameSite {
    /// `HTTPCookie.sameSitePolicy`: `.sameSiteLax`, `.sameSiteStrict`, or nil.
    public enum Policy: Sendable, Equatable {
        case lax
        case strict
        /// No policy: sent cross-site.
        case absent
    }

    public static func policy(for sameSite: Cookie.SameSite) -> Policy {
        switch sameSite {
        case .strict: .strict
        case .lax, .unspecified: .lax
        case .none: .absent
        }
    }

    public static func sameSite(for policy: Policy) -> Cookie.SameSite {
        switch policy {
        case .strict: .strict
        case .lax: .lax
        case .absent: .none
        }
    }
}
