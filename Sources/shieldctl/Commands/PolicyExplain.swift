import CaptureShield
import Foundation

/// `shieldctl policy explain`: why a window is secure or not.
struct PolicyExplainCommand: Command {
  static let name = "policy explain"
  static let abstract = "Explain why a window is secure or not, rule by rule."
  static let usage =
    "shieldctl policy explain [--policy FILE]... (--window-facts JSON | --window ID [--display D])"
  static let help = """
    OVERVIEW: Explain why a window is secure or not, rule by rule.

    USAGE: shieldctl policy explain [--policy FILE]... (--window-facts JSON | --window ID [--display D])

    Evaluates the policy against a window's facts and prints, one line each: the
    window's tag, every 'secure' rule with each criterion (= when it matches, != when
    not, and the actual value), the decision, how the 'capture' rules classify the
    window's client (allowed, known, ordinary or unidentified), and whether
    'keyloggers.allow' lets it listen to the keyboard unnamed. The facts come from
    --window-facts, or from a live window with --window. No daemon is needed.

    A rule on class, instance or title gets a note: those are properties of the
    window, and any X client can rewrite them, so another client can take a window
    out of such a rule. exe, comm, pid and uid come from the X server and /proc.

    OPTIONS:
      --policy FILE          Use this policy file (repeatable; merged in order).
                             Default: the files 'shieldctl watch' loads by default;
                             when none exists, the built-in defaults (and it says so).
      --window-facts JSON    The facts as a JSON object, or @FILE to read it from a
                             file. Keys (all optional): class, instance, title, exe,
                             comm (strings), pid, uid (integers), and tag: one of
                             absent, secure, notSecure, malformed (default: absent).
                             For example:
                             {"class":"KeePassXC","title":"db","exe":"/usr/bin/keepassxc","pid":12,"uid":1000,"tag":"secure"}
      --window ID            Read the facts and the tag of this window (decimal or 0x
                             hex); a window manager's frame is resolved to the
                             application window inside it. A secure window's
                             title, which the Xorg module hides from this
                             command, comes from the daemon (to its own user).
      --display D            The X display for --window (default: $DISPLAY).
      -h, --help             Show this help.

    EXIT STATUS:
      0   the explanation was printed
      1   the policy is invalid, no such window, or an X error
      64  usage error
    """

  enum Subject {
    case facts(Facts, TagState)
    case window(WindowID, display: String?)
  }

  var policyFiles: [String]
  var subject: Subject

  static func parse(_ args: [String]) throws(UsageError) -> PolicyExplainCommand {
    let p = try ArgumentScanner.scan(
      args,
      options: [
        .value("--policy", repeatable: true), .value("--window-facts"), .value("--window"), .value("--display"),
      ])
    try p.expectPositionals(max: 0)
    let files = p.all("--policy")
    if files.contains("") { throw UsageError("option '--policy' requires a file name, not an empty string") }
    let display = try Common.display(p)
    switch (p.value("--window-facts"), p.value("--window")) {
    case (nil, nil):
      throw UsageError("give --window-facts JSON or --window ID")
    case (.some, .some):
      throw UsageError("give --window-facts or --window, not both")
    case (.some(let json), nil):
      if display != nil { throw UsageError("option '--display' is only used with --window") }
      let (facts, tag) = try WindowFactsInput.parse(json)
      return PolicyExplainCommand(policyFiles: files, subject: .facts(facts, tag))
    case (nil, .some(let id)):
      return PolicyExplainCommand(policyFiles: files, subject: .window(try Values.windowID(id), display: display))
    }
  }

  func run() throws -> Int32 {
    let policy: Policy
    var policyLine: String
    if policyFiles.isEmpty {
      let defaults = PolicyLoader.defaultPaths(environment: ProcessInfo.processInfo.environment)
      if defaults.isEmpty {
        policy = Policy()
        policyLine = "policy: built-in defaults (no policy file found"
        if let user = PolicyLoader.userPath(environment: ProcessInfo.processInfo.environment) {
          policyLine += " in \(PolicyLoader.systemDirectory) or at \(Text.show(user))"
        }
        policyLine += ")"
      } else {
        policy = try Self.load(defaults)
        policyLine = "policy: " + defaults.map { Text.show($0) }.joined(separator: ", ")
      }
    } else {
      policy = try Self.load(policyFiles)
      policyLine = "policy: " + policyFiles.map { Text.show($0) }.joined(separator: ", ")
    }

    let facts: Facts
    let tag: TagState
    var windowLine: String?
    switch subject {
    case .facts(let f, let t):
      (facts, tag) = (f, t)
    case .window(let given, let display):
      let x = try XControl(display: display)
      let client = try x.clientWindow(for: given)
      var info = try x.windowFacts(client)
      // Under the Xorg module a secure window's title reads empty for this (untrusted)
      // command; the daemon tells its own user.
      if info.facts.title?.isEmpty ?? true, let t = x.secureWindowTitles()?[client] { info.facts.title = t }
      (facts, tag) = (info.facts, info.tag)
      windowLine = "window: " + Common.describe(client: client, given: given)
    }

    print(policyLine)
    if let windowLine { print(windowLine) }
    print("facts: " + Self.describe(facts))
    let explanation = policy.explainWindow(facts: facts, tag: tag)
    for line in explanation.lines + explanation.rewritableNotes { print(Text.show(line, limit: 4000)) }
    print(Self.captureLine(policy, facts))
    print(Self.keyloggerLine(policy, facts))
    return ExitCode.ok
  }

  /// The merged policy; an invalid one is an error listing every diagnostic.
  static func load(_ paths: [String]) throws -> Policy {
    do {
      return try PolicyLoader.load(paths: paths)
    } catch {
      throw RuntimeError("invalid policy:\n\(error.description)")
    }
  }

  /// `class "KeePassXC", title "db", exe "/usr/bin/keepassxc", pid 12, uid 1000`.
  static func describe(_ f: Facts) -> String {
    var parts: [String] = []
    for (key, value) in [
      ("class", f.class), ("instance", f.instance), ("title", f.title), ("exe", f.exe), ("comm", f.comm),
    ] {
      if let value { parts.append("\(key) \(Text.quoted(value))") }
    }
    if let pid = f.pid { parts.append("pid \(pid)") }
    if let uid = f.uid { parts.append("uid \(uid)") }
    return parts.isEmpty ? "none known" : parts.joined(separator: ", ")
  }

  /// Whether `keyloggers.allow` lets the window's client listen to the keyboard unnamed.
  static func keyloggerLine(_ policy: Policy, _ f: Facts) -> String {
    guard policy.keyloggers.enabled else {
      return "keyloggers: not watched (keyloggers.enabled is false)"
    }
    let identity = ClientIdentity(pid: f.pid, exe: f.exe, comm: f.comm, uid: f.uid)
    if let rule = policy.keyloggers.allowRule(identity) {
      return
        "keyloggers: allowed by keyloggers.allow \(Text.show(rule.label)): the client may listen to the keyboard without an audit record or a notice"
    }
    if f.exe == nil && f.comm == nil {
      return "keyloggers: unidentified client (no executable): never allowed to listen to the keyboard unnamed"
    }
    return
      "keyloggers: not allowed: without the Xorg module, listening to the keyboard is audited (keylogger-suspected) and named when a secure window has the focus"
  }

  /// How the `capture` rules classify the window's client, and by which rule.
  static func captureLine(_ policy: Policy, _ f: Facts) -> String {
    let identity = ClientIdentity(pid: f.pid, exe: f.exe, comm: f.comm, uid: f.uid)
    let clientFacts = identity.facts
    switch policy.classify(identity) {
    case .allowed:
      let rule = policy.captureAllow.first { $0.matches(clientFacts) }
      return
        "capture: allowed by capture.allow \(rule.map { Text.show($0.label) } ?? "rule"): the client may read pixels without starting a capture session"
    case .known:
      let rule = policy.captureKnown.first { $0.matches(clientFacts) }
      return
        "capture: known capturer by capture.known \(rule.map { Text.show($0.label) } ?? "rule"): capturing from the moment the client connects"
        + (policy.idle.map {
          " until it makes no capture request for \($0) (capture.idle), then again at its next one"
        } ?? "")
    case .ordinary:
      return "capture: ordinary client: a capture session starts at its first capture request"
    case .unidentified:
      return
        "capture: unidentified client (no pid): never allowed; a capture session starts at its first capture request"
    }
  }
}

/// The `--window-facts` JSON object.
enum WindowFactsInput {
  static let keys = ["class", "instance", "title", "exe", "comm", "pid", "uid", "tag"]
  static let tags: [(String, TagState)] = [
    ("absent", .absent), ("secure", .secure), ("notSecure", .notSecure), ("malformed", .malformed),
  ]

  static func parse(_ argument: String) throws(UsageError) -> (Facts, TagState) {
    var text = argument
    if argument.hasPrefix("@") {
      let path = String(argument.dropFirst())
      switch Output.readFile(path) {
      case .success(let contents): text = contents
      case .failure(let error):
        throw UsageError("cannot read window facts from '\(Text.show(path))': \(error)")
      }
    }
    let decoder = JSONDecoder()
    do {
      let decoded = try decoder.decode(Decoded.self, from: Data(text.utf8))
      return (decoded.facts, decoded.tag)
    } catch let error as UsageError {
      throw error
    } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
      throw UsageError("--window-facts must be a JSON object, e.g. {\"class\":\"KeePassXC\"}")
    } catch {
      throw UsageError("--window-facts is not valid JSON")
    }
  }

  struct Key: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
  }

  struct Decoded: Decodable {
    var facts = Facts()
    var tag = TagState.absent

    init(from decoder: any Decoder) throws {
      let c = try decoder.container(keyedBy: Key.self)
      for key in c.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
        let name = key.stringValue
        guard WindowFactsInput.keys.contains(name) else {
          throw UsageError(
            "unknown key '\(Text.show(name))' in --window-facts (known keys: \(WindowFactsInput.keys.joined(separator: ", ")))"
          )
        }
        if try c.decodeNil(forKey: key) { continue }
        switch name {
        case "pid", "uid":
          guard let n = try? c.decode(Int.self, forKey: key), n >= 0 else {
            throw UsageError("'\(name)' in --window-facts must be a non-negative integer")
          }
          if name == "pid" { facts.pid = n } else { facts.uid = n }
        case "tag":
          let names = WindowFactsInput.tags.map(\.0)
          guard let s = try? c.decode(String.self, forKey: key),
            let t = WindowFactsInput.tags.first(where: { $0.0 == s })?.1
          else {
            throw UsageError("'tag' in --window-facts must be one of \(names.joined(separator: ", "))")
          }
          tag = t
        default:
          guard let s = try? c.decode(String.self, forKey: key) else {
            throw UsageError("'\(name)' in --window-facts must be a string")
          }
          switch name {
          case "class": facts.class = s
          case "instance": facts.instance = s
          case "title": facts.title = s
          case "exe": facts.exe = s
          default: facts.comm = s
          }
        }
      }
    }
  }
}
