/// The command channel between `shieldctl` and the daemon: a Unix socket whose peer the
/// kernel names (SO_PEERCRED), instead of ClientMessages that any X client can forge.
/// The pure parts: where the socket lives and who may send commands.
public enum CommandChannel {
  /// The directory of the daemon's command sockets: `$XDG_RUNTIME_DIR/captureshield`, or
  /// `/tmp/captureshield-UID` when `XDG_RUNTIME_DIR` is unset or not absolute. The daemon
  /// creates it with mode 0700 and refuses one that is not its own (docs/security.md).
  public static func directory(environment: [String: String], uid: UInt32) -> String {
    if let run = environment["XDG_RUNTIME_DIR"], run.hasPrefix("/") {
      return (run.hasSuffix("/") ? String(run.dropLast()) : run) + "/captureshield"
    }
    return "/tmp/captureshield-\(uid)"
  }

  /// The socket's file name for one display and screen: `display-HOST:N.S` (HOST empty for
  /// a local display), so that `:1`, `:1.0` and `unix:1` name the same socket. Characters
  /// other than letters, digits, `.`, `:`, `-` and `_` in the host become `_`.
  public static func socketName(display: String, screen: Int) -> String {
    var name = display
    if let slash = name.lastIndex(of: "/") { name = String(name[name.index(after: slash)...]) }  // launchd style
    var host = ""
    var number = name
    if let colon = name.lastIndex(of: ":") {
      host = String(name[..<colon])
      number = String(name[name.index(after: colon)...])
    }
    if host == "unix" || host == "localhost/unix" { host = "" }
    if let dot = number.firstIndex(of: ".") { number = String(number[..<dot]) }
    let safe = String(
      host.map { c -> Character in
        c.isASCII && (c.isLetter || c.isNumber || c == "." || c == "-" || c == "_") ? c : "_"
      })
    let n = number.allSatisfy(\.isNumber) && !number.isEmpty ? number : "_"
    return "display-\(safe):\(n).\(screen)"
  }

  /// Who sent a command, as the kernel reports it (SO_PEERCRED) and /proc/PID/exe says.
  public struct Peer: Sendable, Hashable {
    public var pid: Int
    public var uid: UInt32
    /// The peer's executable (/proc/PID/exe), nil when unreadable.
    public var exe: String?
    public init(pid: Int, uid: UInt32, exe: String?) {
      self.pid = pid
      self.uid = uid
      self.exe = exe
    }
  }

  /// Whether the daemon (running as `daemonUID`, from the executable `daemonExe`) accepts a
  /// command from `peer`: nil when it does, else why not. Accepted: a process of the same
  /// user that runs the daemon's own program, the same path (after an upgrade replaced the
  /// file, the new one at that path) or the same file (`sameFile`, by device and inode). A
  /// `shieldctl` elsewhere (another build, a copy) is refused: it would be any program that
  /// names itself so.
  public static func refusal(peer: Peer, daemonUID: UInt32, daemonExe: String?, sameFile: Bool) -> String? {
    guard peer.uid == daemonUID else {
      return "sender uid \(peer.uid) is not the daemon's (\(daemonUID))"
    }
    guard let exe = peer.exe.map(withoutDeletedSuffix) else {
      return "the sender's program (/proc/\(peer.pid)/exe) cannot be read"
    }
    if sameFile { return nil }
    if let own = daemonExe.map(withoutDeletedSuffix), own == exe { return nil }
    return "the sender runs \(exe), not the daemon's program \(daemonExe.map(withoutDeletedSuffix) ?? "?")"
  }

  /// Whether the daemon answers a query (`titles`: the secure windows' titles) from
  /// `peer`: any program of the daemon's own user may ask (the session's user sees those
  /// windows on the screen anyway); another user gets nothing. nil when it may.
  public static func queryRefusal(peer: Peer, daemonUID: UInt32) -> String? {
    peer.uid == daemonUID ? nil : "sender uid \(peer.uid) is not the daemon's (\(daemonUID))"
  }

  /// `/usr/bin/shieldctl (deleted)` → `/usr/bin/shieldctl` (readlink of a replaced file).
  public static func withoutDeletedSuffix(_ path: String) -> String {
    path.hasSuffix(" (deleted)") ? String(path.dropLast(" (deleted)".count)) : path
  }

  /// The daemon's answer to a command, one datagram: `ok`, `refused: WHY`, or (to
  /// `titles`) `titles\n` and per window its id and its title's length (32-bit
  /// little-endian each) and the title's UTF-8 bytes.
  public enum Reply: Sendable, Hashable {
    case ok
    case refused(String)
    case titles([WindowID: String])

    /// At most this many bytes of a title, and of a whole reply, are sent.
    public static let titleLimit = 512
    public static let limit = 60 * 1024

    public var wire: [UInt8] {
      switch self {
      case .ok: return Array("ok".utf8)
      case .refused(let why): return Array(("refused: " + why).utf8)
      case .titles(let titles):
        var out = Array("titles\n".utf8)
        for (w, t) in titles.sorted(by: { $0.key < $1.key }) {
          var bytes = Array(t.utf8.prefix(Self.titleLimit))
          if bytes.count < t.utf8.count {
            // Cut before the last character, which may be incomplete.
            while let last = bytes.last, last & 0xC0 == 0x80 { bytes.removeLast() }
            if let last = bytes.last, last >= 0xC0 { bytes.removeLast() }
          }
          guard out.count + 8 + bytes.count <= Self.limit else { break }
          for v in [w, UInt32(bytes.count)] { out += (0..<4).map { UInt8(truncatingIfNeeded: v >> ($0 * 8)) } }
          out += bytes
        }
        return out
      }
    }

    public init(wire: [UInt8]) {
      let header = Array("titles\n".utf8)
      if wire.starts(with: header) {
        var titles: [WindowID: String] = [:]
        var i = header.count
        func word(_ at: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(wire[at + $1]) << ($1 * 8) } }
        while i + 8 <= wire.count {
          let w = word(i)
          let n = Int(word(i + 4))
          guard n <= wire.count - i - 8 else { break }
          titles[w] = String(decoding: wire[(i + 8)..<(i + 8 + n)], as: UTF8.self)
          i += 8 + n
        }
        self = .titles(titles)
        return
      }
      let s = String(decoding: wire, as: UTF8.self)
      if s == "ok" {
        self = .ok
      } else if s.hasPrefix("refused: ") {
        self = .refused(String(s.dropFirst("refused: ".count)))
      } else {
        self = .refused("unreadable reply \(s.debugDescription)")
      }
    }
  }
}
