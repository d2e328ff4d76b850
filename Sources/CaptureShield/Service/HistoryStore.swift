// The learned history's file (`capture.learn`, `CaptureHistory`): loaded at start, saved
// batched, atomically (a temporary file renamed), 0600 in a 0700 directory.

import CaptureShieldCore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The history file. A file that cannot be read or decoded is moved aside (`.broken`), an
/// `error` record names it, and learning starts empty: nothing is lost, nothing trusted.
final class HistoryStore {
  let path: String
  let log: AuditLog
  /// Saves at most this often (changes in between wait: `flushIfDue`).
  let interval: PolicyDuration
  private(set) var dirty = false
  private var lastSave = MonotonicTime(nanoseconds: 0)
  /// The file as last read or written (inode, mtime): another writer (`shieldctl history
  /// --forget`) changes it, and the daemon then takes the file's entries.
  private var seen: (ino: UInt64, mtime: Int64)?

  init(path: String, log: AuditLog, interval: PolicyDuration = .seconds(2)) {
    self.path = path
    self.log = log
    self.interval = interval
  }

  /// The history in the file (empty when there is none, or when it is broken).
  func load() -> CaptureHistory {
    switch Self.read(path) {
    case .missing:
      seen = nil
      return CaptureHistory()
    case .ok(let h):
      seen = Self.fileStamp(path)
      return h
    case .broken(let why):
      let aside = path + ".broken"
      let moved = rename(path, aside) == 0
      log.error(
        "capture history \(path) is broken (\(why)); "
          + (moved ? "kept as \(aside)" : "could not move it aside (\(String(cString: strerror(errno))))")
          + "; learning starts empty")
      seen = nil
      return CaptureHistory()
    }
  }

  enum ReadResult {
    case missing
    case ok(CaptureHistory)
    case broken(String)
  }

  static func read(_ path: String) -> ReadResult {
    guard let data = FileManager.default.contents(atPath: path) else {
      return access(path, F_OK) == 0 ? .broken("unreadable") : .missing
    }
    do {
      return .ok(try JSONDecoder().decode(CaptureHistory.self, from: data))
    } catch {
      return .broken(Self.describe(error))
    }
  }

  static func describe(_ error: Error) -> String {
    switch error {
    case DecodingError.dataCorrupted(let c): return c.debugDescription
    case DecodingError.keyNotFound(let k, _): return "no '\(k.stringValue)'"
    case DecodingError.typeMismatch(_, let c): return c.debugDescription
    case DecodingError.valueNotFound(_, let c): return c.debugDescription
    default: return "\(error)"
    }
  }

  /// The history changed: saved now if the last save is `interval` old, else later.
  func changed(_ history: CaptureHistory, now: MonotonicTime) {
    dirty = true
    flushIfDue(history, now: now)
  }

  func flushIfDue(_ history: CaptureHistory, now: MonotonicTime) {
    guard dirty, now >= lastSave + interval else { return }
    save(history, now: now)
  }

  /// The file changed under the daemon (another writer): its history, else nil. Checked
  /// at most every `interval`.
  func externalChange(now: MonotonicTime) -> CaptureHistory? {
    guard now >= lastCheck + interval else { return nil }
    lastCheck = now
    let stamp = Self.fileStamp(path)
    guard stamp?.ino != seen?.ino || stamp?.mtime != seen?.mtime else { return nil }
    dirty = false
    return load()
  }
  private var lastCheck = MonotonicTime(nanoseconds: 0)

  /// Writes `history` (temporary file, fsync, rename), creating the directory 0700.
  func save(_ history: CaptureHistory, now: MonotonicTime) {
    lastSave = now
    do {
      try Self.write(history, to: path)
      dirty = false
      seen = Self.fileStamp(path)
    } catch {
      dirty = false  // one error record per change burst, not one per turn of the loop
      log.error("cannot save capture history \(path): \(error)")
    }
  }

  struct WriteError: Error, CustomStringConvertible {
    var description: String
  }

  static func write(_ history: CaptureHistory, to path: String) throws(WriteError) {
    let dir = (path as NSString).deletingLastPathComponent
    try makeDirectory(dir)
    let enc = JSONEncoder()
    enc.outputFormatting = [.sortedKeys, .prettyPrinted]
    guard let data = try? enc.encode(history) else { throw WriteError(description: "cannot encode") }
    let tmp = path + ".tmp.\(getpid())"
    let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw WriteError(description: "\(tmp): \(String(cString: strerror(errno)))") }
    let ok = data.withUnsafeBytes { buf -> Bool in
      var off = 0
      while off < buf.count {
        let n = Glibc.write(fd, buf.baseAddress! + off, buf.count - off)
        if n <= 0 { return false }
        off += n
      }
      return true
    }
    fchmod(fd, 0o600)
    let synced = fsync(fd) == 0
    close(fd)
    guard ok, synced, rename(tmp, path) == 0 else {
      let why = String(cString: strerror(errno))
      unlink(tmp)
      throw WriteError(description: "\(path): \(why)")
    }
  }

  /// `dir` and its missing parents; `dir` itself 0700.
  static func makeDirectory(_ dir: String) throws(WriteError) {
    var st = stat()
    if stat(dir, &st) == 0 { return }
    do {
      try FileManager.default.createDirectory(
        atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
      throw WriteError(description: "\(dir): \(error.localizedDescription)")
    }
    chmod(dir, 0o700)
  }

  static func fileStamp(_ path: String) -> (ino: UInt64, mtime: Int64)? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    return (UInt64(st.st_ino), Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
  }
}

/// The history file for `shieldctl history`.
public enum HistoryFile {
  /// The file's history; nil when there is none. Throws when it is broken.
  public static func read(_ path: String) throws -> CaptureHistory? {
    switch HistoryStore.read(path) {
    case .missing: return nil
    case .ok(let h): return h
    case .broken(let why): throw HistoryStore.WriteError(description: "\(path) is broken (\(why))")
    }
  }

  /// Writes `history` atomically (0600, the directory 0700).
  public static func write(_ history: CaptureHistory, to path: String) throws {
    try HistoryStore.write(history, to: path)
  }
}
