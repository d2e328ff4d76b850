import Foundation

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

/// The validated content of one policy file. Every setting is optional (nil when the file
/// does not set it), so that `PolicyLoader.merge` knows what each file overrides.
public struct PolicyFile: Sendable, Hashable {
  /// The file's path, as given to the parser.
  public var path: String
  /// The schema version (always a known one in a parsed file).
  public var version: Int
  /// `secure`: window rules.
  public var secure: [Matcher]?
  /// The `capture` section.
  public var capture: Capture
  /// The `shield` section.
  public var shield: Shield
  /// The `clipboard` section.
  public var clipboard: Clipboard

  public init(
    path: String, version: Int = 1, secure: [Matcher]? = nil, capture: Capture = Capture(),
    shield: Shield = Shield(), clipboard: Clipboard = Clipboard()
  ) {
    self.path = path
    self.version = version
    self.secure = secure
    self.capture = capture
    self.shield = shield
    self.clipboard = clipboard
  }

  /// The `capture` section of one file.
  public struct Capture: Sendable, Hashable {
    /// `capture.allow`: clients that may read pixels without starting a capture session.
    public var allow: [Matcher]?
    /// `capture.known`: clients that start a capture session as soon as they connect.
    public var known: [Matcher]?
    /// `capture.replaceDefaultKnown`: whether `known` replaces the built-in list.
    public var replaceDefaultKnown: Bool?
    /// `capture.linger`.
    public var linger: PolicyDuration?
    /// `capture.quarantine`: a duration, or `"off"`.
    public var quarantine: Quarantine?
    /// `capture.quarantineOnLaunch`: whether the quarantine starts when an X client program
    /// starts or a process loads the X client library, before it connects.
    public var quarantineOnLaunch: Bool?

    public init(
      allow: [Matcher]? = nil, known: [Matcher]? = nil, replaceDefaultKnown: Bool? = nil,
      linger: PolicyDuration? = nil, quarantine: Quarantine? = nil, quarantineOnLaunch: Bool? = nil
    ) {
      self.allow = allow
      self.known = known
      self.replaceDefaultKnown = replaceDefaultKnown
      self.linger = linger
      self.quarantine = quarantine
      self.quarantineOnLaunch = quarantineOnLaunch
    }
  }

  /// A `capture.quarantine` setting: `"off"` or a duration.
  public enum Quarantine: Sendable, Hashable {
    /// `"off"`: no quarantine (also overrides an earlier file's duration).
    case off
    /// Shield every non-allowed new client's screen for this long.
    case duration(PolicyDuration)

    /// The value as `Policy.quarantine` holds it.
    public var policyValue: PolicyDuration? {
      switch self {
      case .off: return nil
      case .duration(let d): return d
      }
    }
  }

  /// The `shield` section of one file.
  public struct Shield: Sendable, Hashable {
    public var when: ShieldWhen?
    public var failMode: FailMode?
    public var input: ShieldInput?
    public var label: String?

    public init(
      when: ShieldWhen? = nil, failMode: FailMode? = nil, input: ShieldInput? = nil,
      label: String? = nil
    ) {
      self.when = when
      self.failMode = failMode
      self.input = input
      self.label = label
    }
  }

  /// The `clipboard` section of one file.
  public struct Clipboard: Sendable, Hashable {
    public var enabled: Bool?
    public var sources: [Matcher]?
    public var readers: ClipboardPolicy.ReaderMode?
    public var allow: [Matcher]?
    public var deny: [Matcher]?
    public var clearAfter: PolicyDuration?
    public var maxReads: Int?
    public var selections: [String]?

    public init(
      enabled: Bool? = nil, sources: [Matcher]? = nil, readers: ClipboardPolicy.ReaderMode? = nil,
      allow: [Matcher]? = nil, deny: [Matcher]? = nil, clearAfter: PolicyDuration? = nil,
      maxReads: Int? = nil, selections: [String]? = nil
    ) {
      self.enabled = enabled
      self.sources = sources
      self.readers = readers
      self.allow = allow
      self.deny = deny
      self.clearAfter = clearAfter
      self.maxReads = maxReads
      self.selections = selections
    }
  }
}

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

  static let topKeys = ["version", "secure", "capture", "shield", "clipboard"]
  static let captureKeys = ["allow", "known", "replaceDefaultKnown", "linger", "quarantine", "quarantineOnLaunch"]
  static let shieldKeys = ["when", "failMode", "input", "label"]
  static let clipboardKeys = [
    "enabled", "sources", "readers", "allow", "deny", "clearAfter", "maxReads", "selections",
  ]
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
      if let v = f["capture"], let m = object(v, what: "'capture'") {
        file.capture = capture(m)
      }
      if let v = f["shield"], let m = object(v, what: "'shield'") {
        file.shield = shield(m)
      }
      if let v = f["clipboard"], let m = object(v, what: "'clipboard'") {
        file.clipboard = clipboard(m)
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
      if let v = f["quarantine"] {
        if case .string("off") = v.kind {
          c.quarantine = .off
        } else if let d = duration(v, key: "quarantine", orOff: true) {
          c.quarantine = .duration(d)
        }
      }
      if let v = f["quarantineOnLaunch"] { c.quarantineOnLaunch = bool(v, key: "quarantineOnLaunch") }
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

    // MARK: Matchers

    mutating func matchers(_ v: JSONValue, key: String) -> [Matcher]? {
      guard case .array(let items) = v.kind else {
        fail(
          v.location,
          "'\(key)' must be an array of matchers (e.g. [{ class: \"KeePassXC\" }]), not \(v.typeDescription)"
        )
        return nil
      }
      var out: [Matcher] = []
      var ok = true
      for item in items {
        matcherCount += 1
        if matcherCount > PolicyParser.maxMatchersPerFile {
          if matcherCount == PolicyParser.maxMatchersPerFile + 1 {
            fail(
              item.location,
              "too many matchers in one file (the limit is \(PolicyParser.maxMatchersPerFile))")
          }
          return nil
        }
        if let m = matcher(item, listKey: key) { out.append(m) } else { ok = false }
      }
      return ok ? out : nil
    }

    mutating func matcher(_ v: JSONValue, listKey: String) -> Matcher? {
      guard case .object(let members) = v.kind else {
        fail(
          v.location,
          "each entry of '\(listKey)' must be a matcher object (e.g. { class: \"KeePassXC\" }), not \(v.typeDescription)"
        )
        return nil
      }
      let (f, hadUnknown) = checkKeys(members, allowed: PolicyParser.matcherKeys, context: "in matcher")
      var m = Matcher(location: v.location)
      var ok = !hadUnknown
      var hasCriterion = false
      for key in ["class", "instance", "title", "exe", "comm"] {
        guard let pv = f[key] else { continue }
        hasCriterion = true
        guard let p = pattern(pv, key: key) else {
          ok = false
          continue
        }
        switch key {
        case "class": m.class = p
        case "instance": m.instance = p
        case "title": m.title = p
        case "exe": m.exe = p
        default: m.comm = p
        }
      }
      for key in ["pid", "uid"] {
        guard let iv = f[key] else { continue }
        hasCriterion = true
        guard let n = integer(iv), n >= 0 else {
          fail(iv.location, "'\(key)' must be a non-negative integer, not \(describeNonInteger(iv))")
          ok = false
          continue
        }
        if key == "pid" { m.pid = n } else { m.uid = n }
      }
      if let nv = f["name"] {
        if let name = string(nv, key: "name") { m.name = name } else { ok = false }
      }
      if !hasCriterion && !hadUnknown {
        fail(
          v.location,
          "empty matcher: give at least one of class, instance, title, exe, comm, pid, uid")
        ok = false
      }
      return ok ? m : nil
    }

    mutating func pattern(_ v: JSONValue, key: String) -> Pattern? {
      guard case .string(let s) = v.kind else {
        fail(v.location, "'\(key)' must be a string (a glob or /regex/), not \(v.typeDescription)")
        return nil
      }
      guard lengthOK(s, v, key: key) else { return nil }
      if s.count >= 2, s.hasPrefix("/"), s.hasSuffix("/") {
        do {
          return try Pattern.parse(s)
        } catch {
          let body = String(s.dropFirst().dropLast())
          fail(
            v.location,
            "bad regular expression '\(PolicyParser.show(s))' for '\(key)': \(PolicyParser.regexComplaint(body, error))"
          )
          return nil
        }
      }
      do {
        _ = try Glob.parse(s)
        return try Pattern.parse(s)
      } catch let error as Glob.SyntaxError {
        fail(
          v.location(ofScalarAt: error.offset), "bad pattern '\(PolicyParser.show(s))' for '\(key)': \(error.message)")
      } catch {
        fail(v.location, "bad pattern '\(PolicyParser.show(s))' for '\(key)': \(error)")
      }
      return nil
    }

    // MARK: Scalars

    mutating func lengthOK(_ s: String, _ v: JSONValue, key: String) -> Bool {
      let n = s.unicodeScalars.count
      guard n <= PolicyParser.maxStringLength else {
        fail(
          v.location,
          "'\(key)' is too long (\(n) characters; the limit is \(PolicyParser.maxStringLength))")
        return false
      }
      return true
    }

    mutating func string(_ v: JSONValue, key: String) -> String? {
      guard case .string(let s) = v.kind else {
        fail(v.location, "'\(key)' must be a string, not \(v.typeDescription)")
        return nil
      }
      return lengthOK(s, v, key: key) ? s : nil
    }

    mutating func bool(_ v: JSONValue, key: String) -> Bool? {
      guard case .bool(let b) = v.kind else {
        fail(v.location, "'\(key)' must be a boolean (true or false), not \(v.typeDescription)")
        return nil
      }
      return b
    }

    func integer(_ v: JSONValue) -> Int? {
      if case .int(let n) = v.kind { return n }
      return nil
    }

    /// `a string`, or for numbers the number itself (`-1`, `1.5`).
    func describeNonInteger(_ v: JSONValue) -> String {
      switch v.kind {
      case .int(let n): return String(n)
      case .double(let d): return d.isNaN ? "NaN" : String(d)
      default: return v.typeDescription
      }
    }

    mutating func duration(_ v: JSONValue, key: String, orOff: Bool = false) -> PolicyDuration? {
      guard case .string(let s) = v.kind else {
        let what = orOff ? "a duration or \"off\"" : "a duration"
        fail(v.location, "'\(key)' must be a string (\(what)), not \(v.typeDescription)")
        return nil
      }
      guard let d = PolicyDuration(parsing: s) else {
        let forms = (orOff ? "\"off\" or " : "") + PolicyParser.durationForms
        fail(v.location, "bad duration '\(PolicyParser.show(s))': expected \(forms)")
        return nil
      }
      return d
    }

    /// One of `allowed` (case-sensitive), else a diagnostic.
    mutating func choice(_ v: JSONValue, key: String, _ allowed: [String]) -> String? {
      let expected = PolicyParser.orList(allowed.map { "\"\($0)\"" })
      guard case .string(let s) = v.kind else {
        fail(v.location, "'\(key)' must be a string (\(expected)), not \(v.typeDescription)")
        return nil
      }
      guard allowed.contains(s) else {
        var message = "unknown value '\(PolicyParser.show(s))' for '\(key)': expected \(expected)"
        if let guess = PolicyParser.closest(to: s, in: allowed) { message += " (did you mean \"\(guess)\"?)" }
        fail(v.location, message)
        return nil
      }
      return s
    }
  }

  // MARK: Helpers

  /// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
  static func orList(_ items: [String]) -> String {
    guard items.count > 1 else { return items.first ?? "" }
    return items.dropLast().joined(separator: ", ") + " or " + items.last!
  }

  /// Why a regex failed to compile: Swift's regex parser names the problem precisely
  /// ("expected ')'"); NSRegularExpression on Linux only says the value is invalid.
  static func regexComplaint(_ body: String, _ error: any Error) -> String {
    do {
      _ = try Regex(body)
    } catch {
      return String(describing: error)
    }
    let ns = error as NSError
    return ns.localizedFailureReason ?? ns.localizedDescription
  }
}

extension PolicyParser {
  /// A user-supplied string made safe for a one-line diagnostic: control and line-break
  /// characters escaped, long strings cut.
  static func show(_ s: String, limit: Int = 80) -> String {
    var out = ""
    var n = 0
    for c in s.unicodeScalars {
      if n == limit {
        out += "…"
        break
      }
      n += 1
      if c.value < 0x20 || c.value == 0x7F || c == "\u{2028}" || c == "\u{2029}" || c == "\u{85}" {
        out += "\\u{\(String(c.value, radix: 16))}"
      } else {
        out.unicodeScalars.append(c)
      }
    }
    return out
  }

  /// The candidate within a small edit distance of `word` (for "did you mean"), if any.
  static func closest(to word: String, in candidates: [String]) -> String? {
    let limit = word.unicodeScalars.count <= 4 ? 1 : 2
    var best: (String, Int)?
    for c in candidates {
      let d = Self.editDistance(word.lowercased(), c.lowercased(), cap: limit + 1)
      if d <= limit, best == nil || d < best!.1 { best = (c, d) }
    }
    return best?.0
  }

  /// Optimal-string-alignment distance (insertions, deletions, substitutions and adjacent
  /// transpositions), giving up at `cap` so hostile long keys stay cheap.
  static func editDistance(_ a: String, _ b: String, cap: Int) -> Int {
    let a = Array(a.unicodeScalars)
    let b = Array(b.unicodeScalars)
    if abs(a.count - b.count) >= cap { return cap }
    if a.isEmpty || b.isEmpty { return min(cap, max(a.count, b.count)) }
    var prev2 = [Int](repeating: 0, count: b.count + 1)
    var prev = Array(0...b.count)
    var cur = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
      cur[0] = i
      var rowMin = cur[0]
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        var v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          v = min(v, prev2[j - 2] + 1)
        }
        cur[j] = v
        rowMin = min(rowMin, v)
      }
      if rowMin >= cap { return cap }
      (prev2, prev, cur) = (prev, cur, prev2)
    }
    return min(prev[b.count], cap)
  }
}
