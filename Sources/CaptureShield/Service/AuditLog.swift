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
