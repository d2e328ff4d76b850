// Which installed programs are X clients: the programs whose start a `LaunchWatch` can
// see even before the loader opens libxcb.
//
// A program is an X client here when its ELF dynamic section needs libxcb, directly or
// through its libraries (import needs libMagickCore, which needs libX11, which needs
// libxcb). The loader's search is followed closely enough for that: DT_RUNPATH / DT_RPATH
// (with $ORIGIN), then the directories of /etc/ld.so.conf and the default ones. A program
// this misses (a script, a 32-bit binary, a library found only through LD_LIBRARY_PATH)
// still has its libxcb open seen, a little later.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The names of the X client programs in a set of directories, found by reading ELF
/// headers on a background queue; `isXClient` reads them from any thread.
final class XClientPrograms: Sendable {
  /// The standard program directories.
  static let standardDirectories = [
    "/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/games", "/usr/local/games",
  ]

  /// The directories whose programs are watched: the standard ones, then the absolute
  /// entries of `path` (the daemon's `PATH`, usually the desktop session's).
  static func programDirectories(path: String? = ProcessInfo.processInfo.environment["PATH"]) -> [String] {
    var dirs = standardDirectories
    for entry in (path ?? "").split(separator: ":") where entry.hasPrefix("/") && !dirs.contains(String(entry)) {
      dirs.append(String(entry))
    }
    return dirs
  }

  /// Where the loader looks for libraries after DT_RUNPATH: /etc/ld.so.conf (and its
  /// includes) in order, then the default directories.
  static func systemLibraryDirectories(confPath: String = "/etc/ld.so.conf") -> [String] {
    var dirs: [String] = []
    var seen = Set<String>()
    func read(_ path: String, depth: Int) {
      guard depth < 4, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
      for raw in text.split(separator: "\n") {
        let line =
          raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first?
          .trimmingCharacters(in: .whitespaces) ?? ""
        if line.hasPrefix("include ") {
          let pattern = line.dropFirst("include ".count).trimmingCharacters(in: .whitespaces)
          for file in glob(pattern) { read(file, depth: depth + 1) }
        } else if line.hasPrefix("/"), seen.insert(line).inserted {
          dirs.append(line)
        }
      }
    }
    read(confPath, depth: 0)
    for d in ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"]
    where seen.insert(d).inserted {
      dirs.append(d)
    }
    return dirs
  }

  private static func glob(_ pattern: String) -> [String] {
    var g = glob_t()
    defer { globfree(&g) }
    guard Glibc.glob(pattern, 0, nil, &g) == 0 else { return [] }
    return (0..<Int(g.gl_pathc)).compactMap { g.gl_pathv[$0].map { String(cString: $0) } }
  }

  /// The daemon's: its scan outlives the launch watches a reload replaces.
  static let shared = XClientPrograms()

  /// What the scans share with the callers.
  private struct State {
    /// Directory → names of the X client programs in it.
    var clients: [String: Set<String>] = [:]
    /// Told (on `queue`) of every program classified: directory, name, X client or not.
    var observers: [Int: @Sendable (String, String, Bool) -> Void] = [:]
    var nextObserver = 0
  }
  private let state = Locked(State())
  /// Libraries and programs already classified (path → needs libxcb). Only the scans use
  /// it, one at a time on `queue`: its lock is never contended, and makes that checkable
  /// (the class is `Sendable`).
  private let memo = Locked<[String: Bool]>([:])
  private let queue = DispatchQueue(label: "captureshield.xclientprograms", qos: .utility)
  let libraryDirectories: [String]

  init(libraryDirectories: [String] = XClientPrograms.systemLibraryDirectories()) {
    self.libraryDirectories = libraryDirectories
  }

  /// Whether `name` in `directory` is a program that loads libxcb. `nil` while that
  /// directory has not been scanned, or when the program was not there at the scan.
  func isXClient(directory: String, name: String) -> Bool? {
    state.withLock { s in
      guard let names = s.clients[directory] else { return nil }
      return names.contains(name) ? true : nil
    }
  }

  /// Calls `observer` on the background queue with every X client program known so far
  /// (directory, name, true), then with every program classified as one from now on, and
  /// with every one that stops being one (false), until `stopObserving`.
  func observe(_ observer: @escaping @Sendable (String, String, Bool) -> Void) -> Int {
    let token = state.withLock { s in
      let token = s.nextObserver
      s.nextObserver += 1
      return token
    }
    queue.async {
      let known = self.state.withLock { s in
        s.observers[token] = observer
        return s.clients
      }
      for (dir, names) in known { for name in names { observer(dir, name, true) } }
    }
    return token
  }

  func stopObserving(_ token: Int) {
    state.withLock { $0.observers[token] = nil }
  }

  /// How many X client programs the scans found.
  var count: Int {
    state.withLock { s in s.clients.values.reduce(0) { $0 + $1.count } }
  }

  /// Scans the directories not scanned yet, on a background queue.
  func scanInBackground(_ directories: [String]) {
    queue.async {
      let todo = self.state.withLock { s in directories.filter { s.clients[$0] == nil } }
      for dir in todo {
        self.scan(dir, names: (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
      }
    }
  }

  /// Classifies one program that appeared in a scanned directory (a package installed it),
  /// on the background queue.
  func classifyInBackground(directory: String, name: String) {
    queue.async {
      self.memo.withLock { $0[directory + "/" + name] = nil }  // a new file under an old name
      self.scan(directory, names: [name])
    }
  }

  /// Waits for the scans queued so far.
  func waitForScans() { queue.sync {} }

  /// Classifies `names` in `directory` (only on `queue`). Symbolic links are skipped: the
  /// kernel reports the file a link resolves to, in its own directory.
  private func scan(_ dir: String, names: [String]) {
    var found = Set<String>()
    var gone = Set<String>()
    for name in names {
      let path = dir + "/" + name
      var st = stat()
      if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_mode & 0o111 != 0, needsLibxcb(path) {
        found.insert(name)
      } else {
        gone.insert(name)
      }
    }
    let (dropped, told) = state.withLock { s in
      // Only programs that were X clients can stop being one (the first scan of a directory
      // finds ~1,000 that never were: nobody needs telling about those).
      let dropped = gone.intersection(s.clients[dir] ?? [])
      s.clients[dir, default: []].formUnion(found)
      s.clients[dir]?.subtract(gone)
      return (dropped, Array(s.observers.values))
    }
    for observer in told {
      for name in found { observer(dir, name, true) }
      for name in dropped { observer(dir, name, false) }
    }
  }

  /// Whether the ELF object at `path` needs libxcb, directly or through its libraries
  /// (only on `queue`).
  private func needsLibxcb(_ path: String, depth: Int = 0) -> Bool {
    if let known = memo.withLock({ $0[path] }) { return known }
    memo.withLock { $0[path] = false }  // a dependency cycle ends here
    guard depth < 16, let deps = ElfDependencies.read(path) else { return false }
    let origin = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
    let runpath = deps.searchPath.map { $0.replacingOccurrences(of: "$ORIGIN", with: origin) }
    var result = false
    for lib in deps.needed {
      if lib.hasPrefix("libxcb.so.") {
        result = true
        break
      }
      let candidates = lib.contains("/") ? [lib] : (runpath + libraryDirectories).map { $0 + "/" + lib }
      guard let found = candidates.first(where: { access($0, R_OK) == 0 }) else { continue }
      if needsLibxcb(found, depth: depth + 1) {
        result = true
        break
      }
    }
    memo.withLock { $0[path] = result }
    return result
  }
}
