import CaptureShield
import Foundation
import Glibc

/// `tag --remember` / `untag --forget`: the remembered rules' file (`RememberedRules`),
/// rewritten as a whole and atomically, and the running daemon reloaded.
enum RememberedFile {
  /// The file's path; an error when the environment names no config directory.
  static func path() throws -> String {
    guard let path = RememberedRules.path(environment: ProcessInfo.processInfo.environment) else {
      throw RuntimeError("cannot remember: neither $XDG_CONFIG_HOME nor $HOME names an absolute directory")
    }
    return path
  }

  /// The applications in the file (none when it does not exist). A file shieldctl cannot
  /// read back is an error: it is never overwritten.
  static func read(_ path: String) throws -> [RememberedApp] {
    guard FileManager.default.fileExists(atPath: path) else { return [] }
    switch Output.readFile(path) {
    case .failure(let error):
      throw RuntimeError("cannot read \(Text.show(path)): \(error)")
    case .success(let text):
      do throws(RememberedRules.Problem) {
        return try RememberedRules.parse(text, path: path)
      } catch {
        throw RuntimeError(
          "\(Text.show(path)) is not as shieldctl wrote it, so it is left alone (fix or remove it):\n\(error)")
      }
    }
  }

  /// Writes `apps` to `path`: a temporary file in the same directory (mode 0600), synced,
  /// then renamed over the old one, so a reader sees the old file or the new one whole.
  static func write(_ apps: [RememberedApp], to path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    do {
      try FileManager.default.createDirectory(
        atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
      throw RuntimeError("cannot create \(Text.show(directory)): \(error.localizedDescription)")
    }
    let temporary = directory + "/.\(RememberedRules.fileName).\(getpid()).tmp"
    let bytes = Array(RememberedRules.render(apps).utf8)
    func failed(_ what: String) -> RuntimeError {
      let reason = String(cString: strerror(errno))
      unlink(temporary)
      return RuntimeError("cannot write \(Text.show(path)): \(what): \(reason)")
    }
    let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw failed("open") }
    var written = 0
    while written < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else {
        close(fd)
        throw failed("write")
      }
      written += n
    }
    guard fsync(fd) == 0 else {
      close(fd)
      throw failed("fsync")
    }
    close(fd)
    guard rename(temporary, path) == 0 else { throw failed("rename") }
    let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dir >= 0 {
      fsync(dir)
      close(dir)
    }
  }

  /// Remembers (or forgets) the applications of `windows`, then asks a running daemon to
  /// reload. Prints one line per change.
  static func update(remember: Bool, windows: [WindowID], on x: borrowing XControl) throws -> Int32 {
    let path = try path()
    let lock = try lock(path)
    defer { close(lock) }
    var apps = try read(path)
    let before = apps
    for w in windows {
      let facts = try x.windowFacts(w).facts
      if remember {
        guard let app = RememberedApp(facts: facts) else {
          throw RuntimeError(
            "cannot remember \(Text.hex(w)): neither its class (WM_CLASS) nor its program (executable) is known")
        }
        let next = RememberedRules.adding(app, to: apps)
        print(
          (next == apps ? "already remembered " : "remembered ") + Text.quoted(app.name) + " (" + describe(app)
            + "): its windows are secure from now on")
        apps = next
      } else {
        let (kept, removed) = RememberedRules.removing(covering: facts, from: apps)
        if removed.isEmpty { print("nothing remembered for \(Text.hex(w)) (\(PolicyExplainCommand.describe(facts)))") }
        for app in removed { print("forgot \(Text.quoted(app.name)) (\(describe(app)))") }
        apps = kept
      }
    }
    guard apps != before else { return ExitCode.ok }
    try write(apps, to: path)
    print("wrote \(Text.show(path))")
    return try reload(x, path: path)
  }

  /// Holds an exclusive lock (`.remembered.json5.lock` next to the file) until the
  /// descriptor is closed: two shieldctl at once do not lose each other's change.
  static func lock(_ path: String) throws -> Int32 {
    let directory = (path as NSString).deletingLastPathComponent
    do {
      try FileManager.default.createDirectory(
        atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
      throw RuntimeError("cannot create \(Text.show(directory)): \(error.localizedDescription)")
    }
    let lockPath = directory + "/.\(RememberedRules.fileName).lock"
    let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else {
      throw RuntimeError("cannot open \(Text.show(lockPath)): \(String(cString: strerror(errno)))")
    }
    while flock(fd, LOCK_EX) != 0 {
      guard errno == EINTR else {
        let reason = String(cString: strerror(errno))
        close(fd)
        throw RuntimeError("cannot lock \(Text.show(lockPath)): \(reason)")
      }
    }
    return fd
  }

  /// `class "KeePassXC", exe "/usr/bin/keepassxc"`.
  static func describe(_ app: RememberedApp) -> String {
    [app.class.map { "class \(Text.quoted($0))" }, app.exe.map { "exe \(Text.quoted($0))" }].compactMap { $0 }
      .joined(separator: ", ")
  }

  /// Asks the daemon to reload; none running is not an error (it loads the file at start).
  static func reload(_ x: borrowing XControl, path: String) throws -> Int32 {
    guard let state = try x.readState() else {
      print("no daemon runs on display \(Text.show(x.displayName)): the rules apply when it starts")
      return ExitCode.ok
    }
    try x.send(.reload)
    print("asked the daemon to reload its policy")
    let defaults = PolicyLoader.defaultPaths()
    if !state.policy.sources.allSatisfy({ defaults.contains($0) }) {
      Output.error(
        "note: the daemon was started with --policy, so it does not load \(Text.show(path)); add --policy \(Text.show(path)) to its command line"
      )
    }
    return ExitCode.ok
  }
}
