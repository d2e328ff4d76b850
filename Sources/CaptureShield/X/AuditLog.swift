import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Writes audit records and daemon messages to stderr (journald reads it) and, with
/// `--syslog`, also to the local syslog socket as RFC 5424 messages.
///
/// The socket is `/dev/log`, or `$CAPTURESHIELD_SYSLOG_SOCKET` when set (tests use a
/// socket of their own). When it cannot be reached, one warning goes to stderr and the
/// records go to stderr only.
///
/// Thread-safe: one lock around each record's writes, so the daemon's threads (the loop,
/// the notification queue) share one log and its lines never interleave (a line longer
/// than a pipe's atomic write, `PIPE_BUF`, would otherwise tear when two threads write).
final class AuditLog: @unchecked Sendable {
  let format: AuditFormat
  let syslog: Bool
  /// Set in `init` only.
  private var sink: SyslogSocket?
  /// Where the lines go: stderr, or the descriptor `init` was given (tests).
  private let output: FileHandle
  /// Held while one record is written (to `output` and to `sink`, whose descriptor it guards).
  private let lock = NSLock()
  /// Only with `CAPTURESHIELD_DEBUG=1` in the environment.
  private let debugEnabled = ProcessInfo.processInfo.environment["CAPTURESHIELD_DEBUG"] == "1"

  init(
    format: AuditFormat, syslog: Bool,
    environment: [String: String] = ProcessInfo.processInfo.environment, output: Int32 = STDERR_FILENO
  ) {
    self.format = format
    self.syslog = syslog
    self.output = output == STDERR_FILENO ? .standardError : FileHandle(fileDescriptor: output, closeOnDealloc: false)
    guard syslog else { return }
    let path = environment[SyslogSocket.pathVariable].flatMap { $0.isEmpty ? nil : $0 } ?? SyslogSocket.defaultPath
    switch SyslogSocket.connect(path: path) {
    case .success(let s): sink = s
    case .failure(let reason):
      writeStderr(
        AuditRecord(
          "warning", [("message", .string("syslog socket \(path) unavailable (\(reason)); logging to stderr only"))]))
    }
  }

  func write(_ r: AuditRecord) {
    let now = Date()
    let line = Data((format.format(r, time: now) + "\n").utf8)
    let message = sink.map { _ in Syslog5424.format(r, time: now, hostname: Syslog5424.hostname, pid: Int(getpid())) }
    lock.lock()
    defer { lock.unlock() }
    output.write(line)
    if let sink, let message { sink.send(message) }
  }

  /// In `init` only (before the log is shared).
  private func writeStderr(_ r: AuditRecord, time: Date = Date()) {
    output.write(Data((format.format(r, time: time) + "\n").utf8))
  }

  func error(_ message: String) {
    write(AuditRecord("error", [("message", .string(message))]))
  }
  func info(_ message: String) {
    write(AuditRecord("info", [("message", .string(message))]))
  }
  /// Only with `CAPTURESHIELD_DEBUG=1` in the environment (expected X races and the like).
  func debug(_ message: String) {
    guard debugEnabled else { return }
    write(AuditRecord("debug", [("message", .string(message))]))
  }
}

/// A connected, non-blocking `SOCK_DGRAM` unix socket to the syslog daemon.
final class SyslogSocket {
  static let defaultPath = "/dev/log"
  /// Environment variable that replaces `/dev/log` (for tests).
  static let pathVariable = "CAPTURESHIELD_SYSLOG_SOCKET"

  let path: String
  private var fd: Int32

  private init(path: String, fd: Int32) {
    self.path = path
    self.fd = fd
  }

  deinit { if fd >= 0 { close(fd) } }

  /// A socket connected to `path`, or why not.
  static func connect(path: String) -> Result<SyslogSocket, SyslogSocketError> {
    let fd = open(path: path)
    guard fd >= 0 else { return .failure(SyslogSocketError(reason: String(cString: strerror(-fd)))) }
    return .success(SyslogSocket(path: path, fd: fd))
  }

  /// A connected descriptor, or -errno.
  private static func open(path: String) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else { return -ENAMETOOLONG }
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return -errno }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in bytes.enumerated() { raw[i] = b }
      raw[bytes.count] = 0
    }
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard result == 0 else {
      let e = errno
      close(fd)
      return -e
    }
    return fd
  }

  /// Sends one message. A full socket drops it (the daemon never blocks on logging); a
  /// syslog daemon that restarted is reconnected once.
  func send(_ message: String) {
    let bytes = Array(message.utf8)
    for attempt in 0..<2 {
      if fd < 0 { fd = Self.open(path: path) }
      guard fd >= 0 else { return }
      let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if n >= 0 { return }
      let e = errno
      guard attempt == 0, e == ECONNREFUSED || e == ENOTCONN || e == ENOENT else { return }
      close(fd)
      fd = -1
    }
  }
}

struct SyslogSocketError: Error, CustomStringConvertible {
  var reason: String
  var description: String { reason }
}

/// RFC 5424 formatting of audit records (pure; see `format`).
public enum Syslog5424 {
  /// Our private enterprise number for the structured-data ID (`captureshield@32473`;
  /// 32473 is the number RFC 5612 reserves for documentation examples).
  public static let structuredDataID = "captureshield@32473"
  /// Facility `daemon` (3).
  public static let facility = 3
  /// The longest parameter value written, in Unicode scalars (the datagram stays small).
  public static let maxValueScalars = 1024

  /// This host's name (`gethostname`), or nil.
  static let hostname: String? = {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }()

  /// The severity of a record: `error` 3 (err), tampering and rejected policies 4
  /// (warning), `info` 6, any other audit event 5 (notice).
  public static func severity(of event: String) -> Int {
    switch event {
    case "error": 3
    case "warning", "shield-tampered", "policy-rejected", "bypass-attempt", "allow-refused", "forged-event": 4
    case "info": 6
    default: 5
    }
  }

  /// `<PRI>1 TIMESTAMP HOSTNAME captureshield PID MSGID [captureshield@32473 key="value" ...] MSG`.
  /// MSGID is the event name; every field becomes an SD-PARAM (`"`, `\` and `]` escaped,
  /// control and line-break characters written as `\u{XXXX}`); MSG is the `message` field
  /// for `info`/`error`/`warning` records, otherwise `event=NAME`. The result never
  /// contains a line break.
  public static func format(_ record: AuditRecord, time: Date, hostname: String?, pid: Int) -> String {
    let pri = facility * 8 + severity(of: record.event)
    var s = "<\(pri)>1 \(timestamp(time)) \(header(hostname, max: 255)) captureshield \(pid) "
    s += header(record.event, max: 32)
    var params = ""
    var message: String?
    for f in record.fields {
      let name = paramName(f.key)
      guard !name.isEmpty else { continue }
      params += " \(name)=\"\(paramValue(f.value.description))\""
      if f.key == "message", ["info", "error", "warning"].contains(record.event) { message = f.value.description }
    }
    s += params.isEmpty ? " -" : " [\(structuredDataID)\(params)]"
    // MSG: UTF-8 with the BOM RFC 5424 asks for.
    s += " \u{FEFF}" + escapeControls(message ?? "event=\(record.event)", escapeSD: false)
    return s
  }

  /// RFC 3339 UTC with milliseconds: `2024-05-01T12:00:00.123Z`.
  static func timestamp(_ time: Date) -> String {
    time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
  }

  /// A header field: printable US-ASCII (33...126) only, at most `max` characters; `-`
  /// when empty or absent.
  static func header(_ value: String?, max: Int) -> String {
    guard let value else { return "-" }
    let kept = value.unicodeScalars.filter { $0.value >= 33 && $0.value <= 126 }.prefix(max)
    return kept.isEmpty ? "-" : String(String.UnicodeScalarView(kept))
  }

  /// An SD-NAME: printable US-ASCII except `=`, space, `]` and `"`, at most 32 characters.
  static func paramName(_ key: String) -> String {
    let kept = key.unicodeScalars.filter {
      $0.value >= 33 && $0.value <= 126 && $0 != "=" && $0 != "]" && $0 != "\""
    }.prefix(32)
    return String(String.UnicodeScalarView(kept))
  }

  /// A PARAM-VALUE: `"`, `\` and `]` escaped with a backslash, controls written out.
  /// (Controls: every scalar `Escaping.mustEscape` names, bidirectional and invisible
  /// format characters included, as `\u{XXXX}`.)
  public static func paramValue(_ value: String) -> String {
    var v = value
    if v.unicodeScalars.count > maxValueScalars {
      v = String(String.UnicodeScalarView(v.unicodeScalars.prefix(maxValueScalars))) + "…"
    }
    return escapeControls(v, escapeSD: true)
  }

  static func escapeControls(_ value: String, escapeSD: Bool) -> String {
    var out = String.UnicodeScalarView()
    for c in value.unicodeScalars {
      if escapeSD, c == "\"" || c == "\\" || c == "]" {
        out.append("\\")
        out.append(c)
      } else if Escaping.mustEscape(c) {
        out.append(contentsOf: "\\u{\(String(c.value, radix: 16, uppercase: true))}".unicodeScalars)
      } else {
        out.append(c)
      }
    }
    return String(out)
  }
}
