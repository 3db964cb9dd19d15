import Foundation
import SwiftSyntax

/// Calls that hold their thread until something else happens: a sleep, a wait on a semaphore, group, condition or
/// future, a wait for a child process, a read of a pipe to its end.
///
/// Swift's cooperative pool has one thread per core. Code on it that blocks holds a thread every other task needs: on
/// a two-core machine two such calls stop every timer, request and timeout in the process until they return (issue
/// 57: a 1-second timeout that fired after 60 s). The rule is kept wherever the code is, not only in `async`
/// functions: a synchronous test function and a synchronous helper an async function calls run on the pool too.
///
/// A blocking call is fine on a thread of its own: lexically inside the closure given to `Thread { }`,
/// `Thread(block:)`, `Thread.detachNewThread { }` or `onOwnThread { }`. Anything else is listed in the allow-list with
/// the reason it cannot starve the pool.
public enum BlockingScan {
    /// What a blocking call is, by how it is spelled; `why` is printed with each finding.
    public struct Rule: Sendable {
        public enum Shape: Sendable {
            /// A free function called: `usleep(1000)`.
            case function(String)
            /// A method called on a value, not under `await`: `group.wait()`, `process.waitUntilExit()`.
            case method(String)
            /// A static method on a type: `Thread.sleep(forTimeInterval: 1)`.
            case staticMethod(type: String, name: String)
            /// A property read on a value: `handle.availableData`.
            case property(String)
        }

        public let shape: Shape
        public let why: String
    }

    public static let rules: [Rule] = [
        .init(shape: .function("usleep"), why: "sleeps its thread"),
        .init(shape: .function("sleep"), why: "sleeps its thread"),
        .init(shape: .function("nanosleep"), why: "sleeps its thread"),
        .init(shape: .staticMethod(type: "Thread", name: "sleep"), why: "sleeps its thread"),
        .init(shape: .method("wait"), why: "waits on a semaphore, group, condition or future"),
        .init(shape: .method("waitUntilExit"), why: "waits for a child process to exit"),
        .init(shape: .method("readDataToEndOfFile"), why: "reads a pipe or file until its end"),
        .init(shape: .method("readToEnd"), why: "reads a pipe or file until its end"),
        .init(shape: .property("availableData"), why: "waits until a pipe has data"),
    ]

    /// The calls whose closures run on a thread of their own.
    static let ownThreadCalls: Set<String> = ["Thread", "Thread.detachNewThread", "onOwnThread"]

    public struct Finding: Equatable, Sendable {
        public let path: String
        public let line: Int
        public let column: Int
        /// The call as the allow-list names it: `usleep`, `wait`, `Thread.sleep`, `availableData`.
        public let call: String
        /// The declaration the call is in (`func put`, `init`, `let reader`); "top level" outside any.
        public let within: String
        public let why: String

        public var description: String {
            "\(path):\(line):\(column): \(call) \(why), in \(within): await an async form, run it in onOwnThread { }, or allow it with a reason"
        }
    }

    /// One allowed blocking call: in `path`, inside `within`, the call `call`, for `reason`.
    public struct Allowance: Equatable, Sendable {
        public let path: String
        public let within: String
        public let call: String
        public let reason: String
        public let line: Int
    }

    /// Reads the allow-list: `path | within | call | reason` a line; `#` starts a comment. A line without its four
    /// parts, or with an empty reason, is a problem.
    public static func allowances(from text: String, named name: String) -> (allowances: [Allowance], problems: [String]) {
        var allowances: [Allowance] = []
        var problems: [String] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(separator: "|", maxSplits: 3).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 4, parts.allSatisfy({ !$0.isEmpty }) else {
                problems.append("\(name):\(index + 1): expected `path | within | call | reason`, each part given")
                continue
            }
            allowances.append(Allowance(path: parts[0], within: parts[1], call: parts[2], reason: parts[3], line: index + 1))
        }
        return (allowances, problems)
    }

    public struct Report: Sendable {
        public var findings: [Finding] = []
        /// Findings an allowance covers.
        public var allowed: [Finding] = []
        /// Allowances that cover nothing: stale, so the list never keeps a hole open for code that is gone.
        public var unused: [Allowance] = []
        public var fileCount = 0
    }

    public static func scan(_ files: [SourceFile], allowances: [Allowance] = []) -> Report {
        var report = Report(fileCount: files.count)
        var used = Set<Int>()
        for file in files {
            let visitor = BlockingCallVisitor(file: file)
            visitor.walk(file.tree)
            for finding in visitor.findings {
                if let index = allowances.firstIndex(where: { $0.path == finding.path && $0.within == finding.within && $0.call == finding.call }) {
                    used.insert(index)
                    report.allowed.append(finding)
                } else {
                    report.findings.append(finding)
                }
            }
        }
        report.unused = allowances.enumerated().filter { !used.contains($0.offset) }.map(\.element)
        return report
    }
}

private final class BlockingCallVisitor: SyntaxVisitor {
    let file: SourceFile
    var findings: [BlockingScan.Finding] = []

    init(file: SourceFile) {
        self.file = file
        super.init(viewMode: .sourceAccurate)
    }

    override func visit(_ call: FunctionCallExprSyntax) -> SyntaxVisitorContinueKind {
        let callee = call.calledExpression
        for rule in BlockingScan.rules {
            switch rule.shape {
            case .function(let name):
                if let reference = callee.as(DeclReferenceExprSyntax.self), reference.baseName.text == name {
                    record(Syntax(call), call: name, rule: rule)
                }
            case .staticMethod(let type, let name):
                if let member = callee.as(MemberAccessExprSyntax.self), member.declName.baseName.text == name,
                   member.base?.as(DeclReferenceExprSyntax.self)?.baseName.text == type {
                    record(Syntax(call), call: "\(type).\(name)", rule: rule)
                }
            case .method(let name):
                // `.wait("x")` without a base is an enum case or a static member, not a wait.
                if let member = callee.as(MemberAccessExprSyntax.self), member.declName.baseName.text == name, member.base != nil,
                   !isAwaited(Syntax(call)) {
                    record(Syntax(call), call: name, rule: rule)
                }
            case .property:
                continue
            }
        }
        return .visitChildren
    }

    override func visit(_ member: MemberAccessExprSyntax) -> SyntaxVisitorContinueKind {
        for rule in BlockingScan.rules {
            guard case .property(let name) = rule.shape, member.declName.baseName.text == name, member.base != nil else { continue }
            record(Syntax(member), call: name, rule: rule)
        }
        return .visitChildren
    }

    private func record(_ node: Syntax, call: String, rule: BlockingScan.Rule) {
        guard !onOwnThread(node) else { return }
        let at = file.converter.location(for: node.positionAfterSkippingLeadingTrivia)
        findings.append(.init(path: file.path, line: at.line, column: at.column, call: call, within: declaration(around: node), why: rule.why))
    }

    /// Whether the expression is the operand of an `await` (`await signal.wait()`, `try await group.wait()`).
    private func isAwaited(_ node: Syntax) -> Bool {
        var current = node.parent
        while let node = current {
            if node.is(AwaitExprSyntax.self) { return true }
            // An await further out covers only what is in the same expression.
            if node.is(CodeBlockItemSyntax.self) || node.is(ClosureExprSyntax.self) || node.is(MemberBlockItemSyntax.self) { return false }
            current = node.parent
        }
        return false
    }

    /// Whether the node sits in a closure given to a call that runs it on a thread of its own.
    private func onOwnThread(_ node: Syntax) -> Bool {
        var current = node.parent
        while let node = current {
            if let closure = node.as(ClosureExprSyntax.self), let call = enclosingCall(of: closure),
               BlockingScan.ownThreadCalls.contains(call.calledExpression.trimmedDescription) {
                return true
            }
            current = node.parent
        }
        return false
    }

    /// The call a closure is given to, as its trailing closure or as an argument.
    private func enclosingCall(of closure: ClosureExprSyntax) -> FunctionCallExprSyntax? {
        if let call = closure.parent?.as(FunctionCallExprSyntax.self), call.trailingClosure?.id == closure.id { return call }
        if let argument = closure.parent?.as(LabeledExprSyntax.self), let call = argument.parent?.parent?.as(FunctionCallExprSyntax.self) {
            return call
        }
        return nil
    }

    /// The nearest named declaration around the node: how the allow-list finds a call that moves between lines.
    private func declaration(around node: Syntax) -> String {
        var current = node.parent
        while let node = current {
            if let function = node.as(FunctionDeclSyntax.self) { return "func \(function.name.text)" }
            if node.is(InitializerDeclSyntax.self) { return "init" }
            if node.is(DeinitializerDeclSyntax.self) { return "deinit" }
            // A property or a global, not a local: a call in `let data = ...` inside a function is that function's.
            if let variable = node.as(VariableDeclSyntax.self), let binding = variable.bindings.first,
               let name = binding.pattern.as(IdentifierPatternSyntax.self),
               variable.parent?.is(MemberBlockItemSyntax.self) == true || variable.parent?.parent?.parent?.is(SourceFileSyntax.self) == true {
                return "\(variable.bindingSpecifier.text) \(name.identifier.text)"
            }
            current = node.parent
        }
        return "top level"
    }
}
