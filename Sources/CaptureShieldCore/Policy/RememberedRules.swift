import Foundation

/// An application `shieldctl tag --remember` made secure: its `WM_CLASS` class and its
/// executable (either may be unknown, not both).
public struct RememberedApp: Sendable, Hashable {
  /// The label of its rules, after `RememberedRules.namePrefix`.
  public var name: String
  public var `class`: String?
  public var exe: String?

  public init(name: String, class: String?, exe: String?) {
    self.name = name
    self.class = `class`
    self.exe = exe
  }

  /// The application of a window with these facts; nil when neither its class nor its
  /// executable is known (nothing to remember it by).
  public init?(facts: Facts) {
    let cls = facts.class.flatMap { $0.isEmpty ? nil : $0 }
    let exe = facts.exe.flatMap { $0.isEmpty ? nil : $0 }
    guard cls != nil || exe != nil else { return nil }
    let base = exe.map { ($0 as NSString).lastPathComponent }
    self.init(name: cls ?? base ?? "?", class: cls, exe: exe)
  }

  /// Whether a window with these facts is this application's (by class or executable).
  public func covers(_ facts: Facts) -> Bool {
    (self.class != nil && facts.class == self.class) || (exe != nil && facts.exe == exe)
  }
}

/// The file of remembered rules (`remembered.json5` next to the user's `policy.json5`),
/// which shieldctl alone writes: one `secure` rule on the executable (which no other X
/// client can change, and which holds from a new window's first frame) and one on the
/// class (which also covers a remote window) per application, each named
/// `remembered: NAME`. Loaded after the user's file: it only adds `secure` rules, so it
/// overrides no setting, and a window both match is reported under the user's own rule.
public enum RememberedRules {
  public static let fileName = "remembered.json5"
  /// The start of every rule's `name`.
  public static let namePrefix = "remembered: "

  /// `$XDG_CONFIG_HOME/captureshield/remembered.json5` (or under `$HOME/.config`).
  public static func path(environment: [String: String]) -> String? {
    guard let user = PolicyLoader.userPath(environment: environment) else { return nil }
    return ((user as NSString).deletingLastPathComponent as NSString).appendingPathComponent(fileName)
  }

  /// Why a file's content cannot be rewritten by shieldctl.
  public struct Problem: Error, Sendable, CustomStringConvertible {
    public var description: String
  }

  /// The applications in a file's text. A file that does not parse, or that has anything
  /// else than remembered rules (someone edited it), is a `Problem`: shieldctl never
  /// rewrites it, so nothing written by hand is lost.
  public static func parse(_ text: String, path: String) throws(Problem) -> [RememberedApp] {
    let file: PolicyFile
    do {
      file = try PolicyParser.parse(text, path: path)
    } catch {
      throw Problem(description: error.description)
    }
    var apps: [RememberedApp] = []
    for m in file.secure ?? [] {
      let label = m.location.map { "\($0)" } ?? path
      guard let name = m.name, name.hasPrefix(namePrefix),
        m.instance == nil, m.title == nil, m.comm == nil, m.pid == nil, m.uid == nil,
        (m.class == nil) != (m.exe == nil)
      else {
        throw Problem(
          description: "\(label): a rule shieldctl did not write (move it to policy.json5)")
      }
      let appName = String(name.dropFirst(namePrefix.count))
      let cls = m.class.map { unescape($0.source) }
      let exe = m.exe.map { unescape($0.source) }
      if let i = apps.firstIndex(where: {
        $0.name == appName && ($0.class == nil && cls != nil || $0.exe == nil && exe != nil)
      }) {
        if let cls { apps[i].class = cls }
        if let exe { apps[i].exe = exe }
      } else {
        apps.append(RememberedApp(name: appName, class: cls, exe: exe))
      }
    }
    if let root = try? JSON5.parse(text, file: path), case .object(let members) = root.kind,
      let other = members.first(where: { $0.key != "version" && $0.key != "secure" })
    {
      throw Problem(
        description: "\(other.keyLocation): '\(other.key)' is not written by shieldctl (move it to policy.json5)")
    }
    return apps
  }

  /// The file's text for `apps`: valid JSON5 the policy parser accepts.
  public static func render(_ apps: [RememberedApp]) -> String {
    var out = """
      // Managed by shieldctl: 'shieldctl tag --remember' adds an application here and
      // 'shieldctl untag --forget' removes it. Write your own rules in policy.json5: this
      // file is rewritten as a whole. Loaded after policy.json5 (docs/policy.md).
      {
        version: 1,
        secure: [

      """
    for app in apps {
      let name = quoted(namePrefix + app.name)
      if let exe = app.exe { out += "    {name: \(name), exe: \(quoted(escape(exe)))},\n" }
      if let cls = app.class { out += "    {name: \(name), class: \(quoted(escape(cls)))},\n" }
    }
    out += "  ],\n}\n"
    return out
  }

  /// `apps` with `app` (unchanged when it is there already).
  public static func adding(_ app: RememberedApp, to apps: [RememberedApp]) -> [RememberedApp] {
    apps.contains { $0.class == app.class && $0.exe == app.exe } ? apps : apps + [app]
  }

  /// `apps` without those that cover a window with `facts`, and those removed.
  public static func removing(covering facts: Facts, from apps: [RememberedApp]) -> (
    kept: [RememberedApp], removed: [RememberedApp]
  ) {
    (apps.filter { !$0.covers(facts) }, apps.filter { $0.covers(facts) })
  }

  /// A glob matching exactly `value`.
  static func escape(_ value: String) -> String {
    var out = ""
    for c in value.unicodeScalars {
      if "\\*?[]".unicodeScalars.contains(c) { out += "\\" }
      out.unicodeScalars.append(c)
    }
    // `/.../` would be read as a regular expression.
    if out.count >= 2 && out.hasPrefix("/") && out.hasSuffix("/") { out = "\\" + out }
    return out
  }

  static func unescape(_ glob: String) -> String {
    var out = ""
    var escaped = false
    for c in glob.unicodeScalars {
      if c == "\\" && !escaped {
        escaped = true
        continue
      }
      escaped = false
      out.unicodeScalars.append(c)
    }
    return out
  }

  /// A JSON string literal (JSON5 accepts JSON's).
  static func quoted(_ s: String) -> String {
    var out = "\""
    for c in s.unicodeScalars {
      switch c {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default:
        if c.value < 0x20 || c == "\u{2028}" || c == "\u{2029}" || c == "\u{7F}" {
          out += String(format: "\\u%04x", c.value)
        } else {
          out.unicodeScalars.append(c)
        }
      }
    }
    return out + "\""
  }
}
