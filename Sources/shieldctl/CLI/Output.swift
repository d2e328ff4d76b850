import CaptureShield
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Where the CLI writes. Standard output goes through `print` (buffered, flushed at
/// exit); standard error is written at once.
enum Output {
  /// Writes `text` to standard error, each line escaped (`Escaping.show`, no cut): error
  /// messages quote file contents, paths and X server replies, and none of it may reach
  /// the terminal raw.
  static func error(_ text: String) {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
      Escaping.show(String($0), limit: .max)
    }
    let safe = lines.joined(separator: "\n")
    FileHandle.standardError.write(Data((safe.hasSuffix("\n") ? safe : safe + "\n").utf8))
  }

  /// `Error: <message>`.
  static func failure(_ message: String) {
    error("Error: \(message)")
  }

  /// The three-line usage error report.
  static func usageError(_ message: String, usage: String, helpCommand: String) {
    error("Error: \(message)\nUsage: \(usage)\nSee '\(helpCommand)'.")
  }

  /// Pretty-printed JSON with sorted keys.
  static func json<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    let data = try encoder.encode(value)
    print(String(decoding: data, as: UTF8.self))
  }

  /// A runtime error's message: the description of our own error types, the localized
  /// description of others.
  static func message(of error: any Error) -> String {
    switch error {
    case let e as XError: return e.description
    case let e as PolicyError: return e.description
    case let e as RuntimeError: return e.description
    case let e as CustomStringConvertible where !(e is NSError): return e.description
    default: return error.localizedDescription
    }
  }

  /// The contents of a small text file (at most `limit` bytes), or the system's reason
  /// why it cannot be read (`No such file or directory`).
  static func readFile(_ path: String, limit: Int = 1 << 20) -> Result<String, RuntimeError> {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
    guard fd >= 0 else { return .failure(RuntimeError(String(cString: strerror(errno)))) }
    defer { close(fd) }
    var st = stat()
    guard fstat(fd, &st) == 0 else { return .failure(RuntimeError(String(cString: strerror(errno)))) }
    guard st.st_mode & S_IFMT == S_IFREG else {
      return .failure(RuntimeError(st.st_mode & S_IFMT == S_IFDIR ? "is a directory" : "not a regular file"))
    }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n < 0 {
        if errno == EINTR { continue }
        return .failure(RuntimeError(String(cString: strerror(errno))))
      }
      if n == 0 { break }
      bytes += buffer[..<n]
      if bytes.count > limit { return .failure(RuntimeError("larger than \(limit) bytes")) }
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      return .failure(RuntimeError("not valid UTF-8"))
    }
    return .success(text)
  }
}
