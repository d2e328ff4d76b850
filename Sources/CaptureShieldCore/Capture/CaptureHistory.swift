/// What the daemon learned per program file (`capture.learn`): which programs made a
/// capture request (from then on each of their connections starts a `known` session, as
/// `capture.known` does, so their next use is pre-empted before their first request), and
/// which were seen starting as X clients `quietAfter` times without ever capturing (their
/// starts skip `capture.quarantine`, so ordinary program starts do not darken the secure
/// windows). Keyed by the program file's identity (`ProgramFile`): a replaced binary is a
/// new program. Bounded (`limit` entries, the least recently seen dropped). Pure value;
/// the shell keeps it in `$XDG_STATE_HOME/captureshield/history.json`.
public struct CaptureHistory: Sendable, Hashable, Codable {
  /// A program file as `stat` sees it: a binary replaced in place (a new inode, size or
  /// modification time) is a new program. For an interpreted program, its script's file.
  public struct ProgramFile: Sendable, Hashable, Codable, Comparable {
    public var dev: UInt64
    public var ino: UInt64
    public var size: Int64
    /// Modification time, nanoseconds since the epoch.
    public var mtime: Int64

    public init(dev: UInt64, ino: UInt64, size: Int64, mtime: Int64) {
      self.dev = dev
      self.ino = ino
      self.size = size
      self.mtime = mtime
    }

    public static func < (a: ProgramFile, b: ProgramFile) -> Bool {
      (a.dev, a.ino, a.size, a.mtime) < (b.dev, b.ino, b.size, b.mtime)
    }
  }

  /// What is known of one program.
  public struct Entry: Sendable, Hashable, Codable {
    public var file: ProgramFile
    /// Its path when last seen (for display: the key is `file`).
    public var path: String
    /// X client starts seen (connections identified as this program).
    public var starts: Int
    /// Capture requests seen (0: it never captured).
    public var captures: Int
    /// Wall-clock seconds since the epoch it was first and last seen.
    public var firstSeen: Double
    public var lastSeen: Double

    /// It captured before: its connections start a `known` session.
    public var captured: Bool { captures > 0 }
  }

  /// How a program counts now.
  public enum Standing: String, Sendable, Hashable, Codable {
    /// It made a capture request before.
    case captured
    /// Seen starting `quietAfter` times or more, never capturing.
    case quiet
    /// Not seen enough to say.
    case new
  }

  public static let version = 1
  /// Entries kept at most.
  public static let defaultLimit = 1_024
  /// Starts without a capture after which a program counts as quiet.
  public static let quietAfter = 3

  public var version = CaptureHistory.version
  public var limit: Int
  public private(set) var entries: [ProgramFile: Entry] = [:]

  public init(limit: Int = CaptureHistory.defaultLimit) {
    self.limit = max(1, limit)
  }

  public func entry(_ file: ProgramFile?) -> Entry? { file.flatMap { entries[$0] } }

  public func standing(_ file: ProgramFile?) -> Standing {
    guard let e = entry(file) else { return .new }
    if e.captured { return .captured }
    return e.starts >= Self.quietAfter ? .quiet : .new
  }

  /// A client of this program connected (identified). Returns whether anything changed.
  @discardableResult
  public mutating func noteStart(_ file: ProgramFile, path: String, at wall: Double) -> Bool {
    update(file, path: path, at: wall) { $0.starts += 1 }
    return true
  }

  /// A client of this program made a capture request (not an allowed one). Returns whether
  /// its standing changed (it had not captured before).
  @discardableResult
  public mutating func noteCapture(_ file: ProgramFile, path: String, at wall: Double) -> Bool {
    let was = entries[file]?.captured ?? false
    update(file, path: path, at: wall) { $0.captures += 1 }
    return !was
  }

  /// Forgets the entries whose path is `path` (all of them: several files may have had
  /// it). Returns how many.
  @discardableResult
  public mutating func forget(path: String) -> Int {
    let gone = entries.filter { $0.value.path == path }.map(\.key)
    for k in gone { entries[k] = nil }
    return gone.count
  }

  public mutating func clear() { entries = [:] }

  /// The entries, most recently seen first.
  public var sorted: [Entry] {
    entries.values.sorted { ($0.lastSeen, $1.file) > ($1.lastSeen, $0.file) }
  }

  private mutating func update(_ file: ProgramFile, path: String, at wall: Double, _ change: (inout Entry) -> Void) {
    var e =
      entries[file] ?? Entry(file: file, path: path, starts: 0, captures: 0, firstSeen: wall, lastSeen: wall)
    e.path = path
    e.lastSeen = max(e.lastSeen, wall)
    change(&e)
    entries[file] = e
    if entries.count > limit, let oldest = entries.values.min(by: { ($0.lastSeen, $0.file) < ($1.lastSeen, $1.file) }) {
      entries[oldest.file] = nil
    }
  }

  // Codable: a list of entries (a dictionary keyed by a struct would encode as a flat array).
  enum CodingKeys: String, CodingKey { case version, limit, entries }

  public init(from decoder: Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    version = try c.decode(Int.self, forKey: .version)
    guard version == Self.version else {
      throw DecodingError.dataCorruptedError(
        forKey: .version, in: c, debugDescription: "history version \(version), expected \(Self.version)")
    }
    limit = max(1, try c.decodeIfPresent(Int.self, forKey: .limit) ?? Self.defaultLimit)
    let list = try c.decode([Entry].self, forKey: .entries)
    for e in list.sorted(by: { $0.lastSeen > $1.lastSeen }).prefix(limit) where entries[e.file] == nil {
      entries[e.file] = e
    }
  }

  public func encode(to encoder: Encoder) throws {
    var c = encoder.container(keyedBy: CodingKeys.self)
    try c.encode(version, forKey: .version)
    try c.encode(limit, forKey: .limit)
    try c.encode(sorted, forKey: .entries)
  }
}

extension CaptureHistory {
  /// Where the daemon keeps the history: `$XDG_STATE_HOME/captureshield/history.json`, or
  /// `~/.local/state/captureshield/history.json` when `XDG_STATE_HOME` is unset or not
  /// absolute (the XDG base directory rules). Nil when neither is known.
  public static func path(environment: [String: String]) -> String? {
    if let s = environment["XDG_STATE_HOME"], s.hasPrefix("/") {
      return (s.hasSuffix("/") ? String(s.dropLast()) : s) + "/captureshield/history.json"
    }
    if let home = environment["HOME"], home.hasPrefix("/") {
      return (home.hasSuffix("/") ? String(home.dropLast()) : home) + "/.local/state/captureshield/history.json"
    }
    return nil
  }
}
