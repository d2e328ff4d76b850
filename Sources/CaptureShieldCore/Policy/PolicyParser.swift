import Foundation

/// Reads one policy file (JSON5) into a `PolicyFile`, reporting every problem it finds
/// with its exact position.
public enum PolicyParser {
  /// The policy schema versions this build understands.
  public static let supportedVersions: [Int] = [1]
  /// The longest string accepted for patterns, names and labels, in Unicode scalars.
  public static let maxStringLength = 4096
  /// The most matchers accepted in one file (all lists together).
  public static let maxMatchersPerFile = 10_000

  /// Parses and validates the text of one policy file. `path` is used in diagnostics and
  /// in each matcher's location. Throws every diagnostic of the file (a syntax error
  /// stops at the first one; schema problems are all collected).
  public static func parse(_ text: String, path: String) throws(PolicyError) -> PolicyFile {
    let root: JSONValue
    do {
      root = try JSON5.parse(text, file: path)
    } catch {
      throw PolicyError(diagnostics: [error])
    }
    var validator = Validator(path: path)
    let file = validator.file(root)
    guard validator.diagnostics.isEmpty else {
      throw PolicyError(diagnostics: validator.sortedDiagnostics)
    }
    return file
  }

  static let topKeys = [
    "version", "secure", "replaceDefaultSecure", "capture", "shield", "clipboard", "notify", "keyloggers",
    "accessibility",
  ]
  static let captureKeys = [
    "allow", "known", "replaceDefaultKnown", "linger", "hold", "quarantine", "quarantineOnLaunch", "allowInjected",
    "idle", "compositors", "learn",
    "replaceDefaultCompositors",
  ]
  static let shieldKeys = ["when", "failMode", "input", "label"]
  static let clipboardKeys = [
    "enabled", "sources", "readers", "allow", "deny", "clearAfter", "maxReads", "selections",
  ]
  static let notifyKeys = ["enabled"]
  static let accessibilityKeys = ["passwordFields"]
  static let keyloggerKeys = ["enabled", "allow", "replaceDefaultAllow"]
  static let matcherKeys = ["class", "instance", "title", "exe", "comm", "pid", "uid", "name"]
  static let selectionNames = ["CLIPBOARD", "PRIMARY"]
  static let durationForms = "a number followed by ms, s, m or h, e.g. \"250ms\" or \"2s\""

  /// Walks the JSON tree, building the `PolicyFile` and collecting diagnostics.
  struct Validator {
    let path: String
    var diagnostics: [PolicyDiagnostic] = []
    var matcherCount = 0

    init(path: String) { self.path = path }

    var sortedDiagnostics: [PolicyDiagnostic] {
      diagnostics.enumerated().sorted { a, b in
        let (la, lb) = (a.element.location, b.element.location)
        if la.line != lb.line { return la.line < lb.line }
        if la.column != lb.column { return la.column < lb.column }
        return a.offset < b.offset
      }.map(\.element)
    }

    mutating func fail(_ location: SourceLocation, _ message: String) {
      diagnostics.append(PolicyDiagnostic(location: location, message: message))
    }

    // MARK: Objects and keys

    /// The members of an object by key (first occurrence), after reporting duplicate and
    /// unknown keys. `hadUnknown` tells whether any key was rejected.
    mutating func checkKeys(
      _ members: [JSONValue.Member], allowed: [String], context: String
    ) -> (fields: [String: JSONValue], hadUnknown: Bool) {
      var fields: [String: JSONValue] = [:]
      var firstSeen: [String: SourceLocation] = [:]
      var hadUnknown = false
      for m in members {
        if let first = firstSeen[m.key] {
          fail(
            m.keyLocation,
            "duplicate key '\(PolicyParser.show(m.key))' \(context) (first given at \(first.line):\(first.column))")
          continue
        }
        firstSeen[m.key] = m.keyLocation
        guard allowed.contains(m.key) else {
          hadUnknown = true
          if let guess = PolicyParser.closest(to: m.key, in: allowed) {
            fail(m.keyLocation, "unknown key '\(PolicyParser.show(m.key))' \(context) (did you mean '\(guess)'?)")
          } else {
            fail(
              m.keyLocation,
              "unknown key '\(PolicyParser.show(m.key))' \(context) (allowed: \(allowed.joined(separator: ", ")))")
          }
          continue
        }
        fields[m.key] = m.value
      }
      return (fields, hadUnknown)
    }

    /// The members of `value` if it is an object, else a type error.
    mutating func object(_ value: JSONValue, what: String) -> [JSONValue.Member]? {
      guard case .object(let members) = value.kind else {
        fail(value.location, "\(what) must be an object, not \(value.typeDescription)")
        return nil
      }
      return members
    }

    // MARK: The file

    mutating func file(_ root: JSONValue) -> PolicyFile {
      var file = PolicyFile(path: path)
      guard
        let members = object(
          root, what: "a policy file (e.g. { version: 1, secure: [...] })")
      else { return file }

      // The version decides how to read the rest: check it first, and stop if unknown.
      if let member = members.first(where: { $0.key == "version" }) {
        let v = member.value
        if let n = integer(v) {
          guard PolicyParser.supportedVersions.contains(n) else {
            let known = PolicyParser.supportedVersions.map(String.init).joined(separator: ", ")
            fail(
              v.location,
              "unsupported policy version \(n): this CaptureShield understands version \(known)")
            return file
          }
          file.version = n
        } else {
          fail(v.location, "'version' must be an integer (1), not \(describeNonInteger(v))")
        }
      } else {
        fail(
          SourceLocation(file: path, line: 1, column: 1), "missing required key 'version'")
      }

      let (f, _) = checkKeys(members, allowed: PolicyParser.topKeys, context: "at top level")
      if let v = f["secure"] { file.secure = matchers(v, key: "secure") }
      if let v = f["replaceDefaultSecure"] { file.replaceDefaultSecure = bool(v, key: "replaceDefaultSecure") }
      if let v = f["capture"], let m = object(v, what: "'capture'") {
        file.capture = capture(m)
      }
      if let v = f["shield"], let m = object(v, what: "'shield'") {
        file.shield = shield(m)
      }
      if let v = f["clipboard"], let m = object(v, what: "'clipboard'") {
        file.clipboard = clipboard(m)
      }
      if let v = f["notify"], let m = object(v, what: "'notify'") {
        let (n, _) = checkKeys(m, allowed: PolicyParser.notifyKeys, context: "in 'notify'")
        if let e = n["enabled"] { file.notify.enabled = bool(e, key: "enabled") }
      }
      if let v = f["accessibility"], let m = object(v, what: "'accessibility'") {
        let (a, _) = checkKeys(m, allowed: PolicyParser.accessibilityKeys, context: "in 'accessibility'")
        if let e = a["passwordFields"] { file.accessibility.passwordFields = bool(e, key: "passwordFields") }
      }
      if let v = f["keyloggers"], let m = object(v, what: "'keyloggers'") {
        let (k, _) = checkKeys(m, allowed: PolicyParser.keyloggerKeys, context: "in 'keyloggers'")
        if let e = k["enabled"] { file.keyloggers.enabled = bool(e, key: "enabled") }
        if let e = k["allow"] { file.keyloggers.allow = matchers(e, key: "allow") }
        if let e = k["replaceDefaultAllow"] {
          file.keyloggers.replaceDefaultAllow = bool(e, key: "replaceDefaultAllow")
        }
      }
      return file
    }

    mutating func capture(_ members: [JSONValue.Member]) -> PolicyFile.Capture {
      var c = PolicyFile.Capture()
      let (f, _) = checkKeys(members, allowed: PolicyParser.captureKeys, context: "in 'capture'")
      if let v = f["allow"] { c.allow = matchers(v, key: "allow") }
      if let v = f["known"] { c.known = matchers(v, key: "known") }
      if let v = f["replaceDefaultKnown"] { c.replaceDefaultKnown = bool(v, key: "replaceDefaultKnown") }
      if let v = f["linger"] { c.linger = duration(v, key: "linger") }
      if let v = f["hold"] {
        if case .string("connected") = v.kind {
          c.hold = .connected
        } else if let d = duration(v, key: "hold", or: "connected") {
          c.hold = .duration(d)
        }
      }
      if let v = f["quarantine"] {
        if case .string("off") = v.kind {
          c.quarantine = .off
        } else if let d = duration(v, key: "quarantine", orOff: true) {
          c.quarantine = .duration(d)
        }
      }
      if let v = f["idle"] {
        if case .string("off") = v.kind {
          c.idle = .off
        } else if let d = duration(v, key: "idle", orOff: true) {
          c.idle = .duration(d)
        }
      }
      if let v = f["quarantineOnLaunch"] { c.quarantineOnLaunch = bool(v, key: "quarantineOnLaunch") }
      if let v = f["allowInjected"] { c.allowInjected = bool(v, key: "allowInjected") }
      if let v = f["learn"] { c.learn = bool(v, key: "learn") }
      if let v = f["compositors"] { c.compositors = matchers(v, key: "compositors") }
      if let v = f["replaceDefaultCompositors"] {
        c.replaceDefaultCompositors = bool(v, key: "replaceDefaultCompositors")
      }
      return c
    }

    mutating func shield(_ members: [JSONValue.Member]) -> PolicyFile.Shield {
      var s = PolicyFile.Shield()
      let (f, _) = checkKeys(members, allowed: PolicyParser.shieldKeys, context: "in 'shield'")
      if let v = f["when"] {
        s.when = choice(v, key: "when", ["always", "capturing"]).flatMap(ShieldWhen.init(rawValue:))
      }
      if let v = f["failMode"] {
        s.failMode = choice(v, key: "failMode", ["open", "closed"]).flatMap(FailMode.init(rawValue:))
      }
      if let v = f["input"] {
        s.input = choice(v, key: "input", ["passthrough", "block"]).flatMap(ShieldInput.init(rawValue:))
      }
      if let v = f["label"] { s.label = string(v, key: "label") }
      return s
    }

    mutating func clipboard(_ members: [JSONValue.Member]) -> PolicyFile.Clipboard {
      var c = PolicyFile.Clipboard()
      let (f, _) = checkKeys(members, allowed: PolicyParser.clipboardKeys, context: "in 'clipboard'")
      if let v = f["enabled"] { c.enabled = bool(v, key: "enabled") }
      if let v = f["sources"] { c.sources = matchers(v, key: "sources") }
      if let v = f["readers"] {
        c.readers = choice(v, key: "readers", ["focused", "allowlist"])
          .flatMap(ClipboardPolicy.ReaderMode.init(rawValue:))
      }
      if let v = f["allow"] { c.allow = matchers(v, key: "allow") }
      if let v = f["deny"] { c.deny = matchers(v, key: "deny") }
      if let v = f["clearAfter"] { c.clearAfter = duration(v, key: "clearAfter") }
      if let v = f["maxReads"] {
        if let n = integer(v), n > 0 {
          c.maxReads = n
        } else {
          fail(v.location, "'maxReads' must be a positive integer, not \(describeNonInteger(v))")
        }
      }
      if let v = f["selections"] { c.selections = selections(v) }
      return c
    }

    mutating func selections(_ v: JSONValue) -> [String]? {
      let expected = PolicyParser.selectionNames.map { "\"\($0)\"" }.joined(separator: " or ")
      guard case .array(let items) = v.kind else {
        fail(v.location, "'selections' must be an array of \(expected), not \(v.typeDescription)")
        return nil
      }
      var out: [String] = []
      var ok = true
      for item in items {
        guard case .string(let s) = item.kind else {
          fail(item.location, "each selection must be \(expected), not \(item.typeDescription)")
          ok = false
          continue
        }
        guard PolicyParser.selectionNames.contains(s) else {
          fail(item.location, "unknown selection '\(PolicyParser.show(s))': expected \(expected)")
          ok = false
          continue
        }
        guard !out.contains(s) else {
          fail(item.location, "duplicate selection '\(s)'")
          ok = false
          continue
        }
        out.append(s)
      }
      return ok ? out : nil
    }
  }
}
