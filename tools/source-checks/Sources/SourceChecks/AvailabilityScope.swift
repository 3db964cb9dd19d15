import SwiftSyntax

/// What the code at one position may assume about the OS it runs on, beyond the deployment target: the versions
/// guaranteed by the `if #available` bodies, `guard #available` statements and `@available` declarations around it.
/// It reads syntax only, as the compiler's availability checking does: a guard's condition is what it says.
public enum AvailabilityScope {
    /// The versions guaranteed at `position` in `file`; a platform left out is guaranteed nothing.
    public static func guaranteed(at position: AbsolutePosition, in tree: SourceFileSyntax) -> [ApplePlatform: PlatformVersion] {
        guard let token = tree.token(at: position) else { return [:] }
        var guaranteed: [ApplePlatform: PlatformVersion] = [:]
        func raise(_ versions: [ApplePlatform: PlatformVersion]) {
            for (platform, version) in versions where guaranteed[platform].map({ $0 < version }) ?? true {
                guaranteed[platform] = version
            }
        }
        var child = Syntax(token)
        while let parent = child.parent {
            // The body of `if #available(...)`, not its `else`.
            if let ifExpression = parent.as(IfExprSyntax.self), ifExpression.body.id == child.id {
                raise(versions(in: ifExpression.conditions))
            }
            // The statements after `guard #available(...) else { ... }` in the same block.
            if let item = child.as(CodeBlockItemSyntax.self), let list = parent.as(CodeBlockItemListSyntax.self) {
                for earlier in list {
                    if earlier.id == item.id { break }
                    if let guardStatement = earlier.item.as(GuardStmtSyntax.self) {
                        raise(versions(in: guardStatement.conditions))
                    }
                }
            }
            // Later conditions of the same `if`/`guard`: `if #available(iOS 17, *), let u = URL(...)`.
            if let element = child.as(ConditionElementSyntax.self), let list = parent.as(ConditionElementListSyntax.self) {
                var earlier: [ConditionElementSyntax] = []
                for other in list {
                    if other.id == element.id { break }
                    earlier.append(other)
                }
                raise(versions(in: earlier))
            }
            // A declaration (function, type, extension, property, initializer...) marked @available.
            if let declaration = parent.asProtocol(WithAttributesSyntax.self) {
                raise(versions(in: declaration.attributes))
            }
            child = parent
        }
        return guaranteed
    }

    /// `#available(iOS 17.0, macOS 14.0, *)` conditions among `conditions` (`#unavailable` guarantees nothing in
    /// the body it guards).
    static func versions(in conditions: some Sequence<ConditionElementSyntax>) -> [ApplePlatform: PlatformVersion] {
        var found: [ApplePlatform: PlatformVersion] = [:]
        for element in conditions {
            guard let condition = element.condition.as(AvailabilityConditionSyntax.self),
                  condition.availabilityKeyword.tokenKind == .poundAvailable else { continue }
            for (platform, version) in shorthandVersions(condition.availabilityArguments) {
                found[platform] = max(found[platform] ?? version, version)
            }
        }
        return found
    }

    /// `@available(iOS 17.0, macOS 14.0, *)` and `@available(iOS, introduced: 17.0)`.
    static func versions(in attributes: AttributeListSyntax) -> [ApplePlatform: PlatformVersion] {
        var found: [ApplePlatform: PlatformVersion] = [:]
        for element in attributes {
            guard case .attribute(let attribute) = element,
                  attribute.attributeName.trimmedDescription == "available",
                  case .availability(let arguments) = attribute.arguments else { continue }
            var versions = shorthandVersions(arguments)
            // Long form: the platform, then `introduced:`.
            if case .token(let first) = arguments.first?.argument, let platform = ApplePlatform.named(first.text) {
                for argument in arguments {
                    guard case .availabilityLabeledArgument(let labeled) = argument.argument,
                          labeled.label.text == "introduced", case .version(let tuple) = labeled.value,
                          let version = PlatformVersion(tuple.trimmedDescription) else { continue }
                    versions[platform] = version
                }
            }
            for (platform, version) in versions { found[platform] = max(found[platform] ?? version, version) }
        }
        return found
    }

    private static func shorthandVersions(_ arguments: AvailabilityArgumentListSyntax) -> [ApplePlatform: PlatformVersion] {
        var found: [ApplePlatform: PlatformVersion] = [:]
        for argument in arguments {
            guard case .availabilityVersionRestriction(let restriction) = argument.argument,
                  let platform = ApplePlatform.named(restriction.platform.text),
                  let tuple = restriction.version, let version = PlatformVersion(tuple.trimmedDescription) else { continue }
            found[platform] = version
        }
        return found
    }
}
