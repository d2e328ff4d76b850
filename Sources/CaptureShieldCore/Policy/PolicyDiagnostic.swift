// How a policy file's problems are reported.

/// One problem in a policy file, printed like a compiler error:
/// `path:line:col: error: message`.
public struct PolicyDiagnostic: Error, Sendable, Hashable, CustomStringConvertible {
  /// Where the problem is (the file, 1-based line and column).
  public var location: SourceLocation
  /// What is wrong, in one line.
  public var message: String

  public init(location: SourceLocation, message: String) {
    self.location = location
    self.message = message
  }

  public var description: String {
    "\(location.file):\(location.line):\(location.column): error: \(message)"
  }
}

/// Every problem found in one or more policy files; its description has one diagnostic
/// per line.
public struct PolicyError: Error, Sendable, CustomStringConvertible {
  /// The problems, in file order and, within a file, in source order.
  public var diagnostics: [PolicyDiagnostic]

  public init(diagnostics: [PolicyDiagnostic]) {
    self.diagnostics = diagnostics
  }

  public var description: String {
    diagnostics.map(\.description).joined(separator: "\n")
  }
}
