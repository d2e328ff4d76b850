import Foundation

/// Writes audit records and daemon messages to stderr (journald reads it).
final class AuditLog {
  let format: AuditFormat
  let syslog: Bool
  init(format: AuditFormat, syslog: Bool) {
    self.format = format
    self.syslog = syslog
  }
  func write(_ r: AuditRecord) {
    let line = format.format(r, time: Date()) + "\n"
    FileHandle.standardError.write(Data(line.utf8))
  }
  func error(_ message: String) {
    write(AuditRecord("error", [("message", .string(message))]))
  }
  func info(_ message: String) {
    write(AuditRecord("info", [("message", .string(message))]))
  }
}
