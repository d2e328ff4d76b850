// Who is behind a launch (`capture.quarantineOnLaunch`): the young processes, from /proc.
//
// The launch watch's inotify event names a file, not a process. So, right after a launch
// and once more when it has settled (`Engine.launchSettle`), the loop lists the processes
// started since shortly before the oldest pending launch, with what tells whether one can be
// a client of this display: its program, whether it maps libxcb, the `DISPLAY` of its
// environment, and what may have put foreign code in it. The engine decides
// (`Engine.launchOver`): a launch of the daemon's own program, of a process of another
// display, or whose process is gone ends at once instead of after the quarantine duration.
// The shields the pump put up at the launch are up until then (the time of this scan: see
// docs/performance.md).

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension ProcessInfoReader {
  /// Processes at most `maxAge` seconds old (their fork), described for `Engine.launchOver`,
  /// with their start on the monotonic clock; `complete` when /proc shows every process
  /// (not mounted with `hidepid`: init's entry is visible). The daemon's own process is left
  /// out.
  /// With `onlyPrograms` (every pending launch is a program start), only processes running
  /// one of those programs are read further (`Engine.launchCouldBe` matches no other).
  static func launchProcesses(maxAge: Double, onlyPrograms: Set<String>? = nil, now: MonotonicTime = Clock.now())
    -> (processes: [LaunchProcess], complete: Bool)
  {
    let complete = access("/proc/1/stat", R_OK) == 0
    guard let dir = opendir("/proc") else { return ([], false) }
    defer { closedir(dir) }
    var t = timespec()
    clock_gettime(CLOCK_BOOTTIME, &t)
    let boot = Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
    let me = Int(getpid())
    var out: [LaunchProcess] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      guard let first = name.utf8.first, first >= UInt8(ascii: "1"), first <= UInt8(ascii: "9"),
        let pid = Int(name), pid != me
      else { continue }
      let base = "/proc/" + name
      guard let stat = readSmallFile(base + "/stat", limit: 4096), let ticks = startTicks(stat: stat) else { continue }
      let age = max(0, boot - Double(ticks) / tick)
      guard age <= maxAge else { continue }
      let startedNs = now.nanoseconds.subtractingReportingOverflow(UInt64(age * 1e9))
      var p = LaunchProcess(
        pid: pid, started: MonotonicTime(nanoseconds: startedNs.overflow ? 0 : startedNs.partialValue))
      p.exe = readLink(base + "/exe")
      if let comm = readSmallFile(base + "/comm", limit: 64) {
        p.comm = String(decoding: comm.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
      }
      if let cmdline = readSmallFile(base + "/cmdline", limit: 4096) {
        p.arguments = cmdline.split(separator: 0).prefix(3).map { String(decoding: $0, as: UTF8.self) }
      }
      if let programs = onlyPrograms, !programs.contains(where: { Engine.runs(p, $0) }) { continue }
      if let maps = readSmallFile(base + "/maps", limit: 4 << 20) {
        p.loadsXCB = LaunchWatch.mappedLibxcb(maps: String(decoding: maps, as: UTF8.self)) != nil
      }
      let environ = readSmallFile(base + "/environ", limit: 256 * 1024)
      if let environ {
        p.display = environment(environ, "DISPLAY") ?? ""
      }
      p.injection =
        injection(environ: environ, status: readSmallFile(base + "/status"))
        ?? environ.flatMap { loaderPath(environ: $0) }
      out.append(p)
    }
    return (out, complete)
  }

  /// The value of `name` in a NUL-separated environment block, or nil.
  static func environment(_ environ: [UInt8], _ name: String) -> String? {
    let prefix = Array((name + "=").utf8)
    for entry in environ.split(separator: 0) where entry.starts(with: prefix) {
      return String(decoding: entry.dropFirst(prefix.count), as: UTF8.self)
    }
    return nil
  }

  /// The first directory of an `LD_LIBRARY_PATH` value that someone other than root could
  /// put a library into, described (nil: none). Empty and relative entries (the working
  /// directory), directories `isSafe` refuses (not root's, writable by others, missing)
  /// count. With such a directory the loader may load another program's libxcb into an
  /// allowed program: an allow rule must not trust it then (`ClientIdentity.injection`).
  static func unsafeLoaderDirectory(_ value: String, isSafe: (String) -> Bool) -> String? {
    for entry in value.split(separator: ":", omittingEmptySubsequences: false).map(String.init) {
      let dir = entry.trimmingCharacters(in: .whitespaces)
      if dir.isEmpty { return "an empty entry (the working directory)" }
      if !dir.hasPrefix("/") { return "\(dir) (relative to the working directory)" }
      if !isSafe(dir) { return "\(dir) (not root's, or writable by others)" }
    }
    return nil
  }

  /// Whether only root can change `path`: it and its parent directories exist, belong to
  /// root and are writable by nobody else.
  static func rootOnly(_ path: String) -> Bool {
    var p = path
    while true {
      var st = stat()
      guard stat(p, &st) == 0, st.st_uid == 0, st.st_mode & 0o022 == 0 else { return false }
      if p == "/" { return true }
      p = (p as NSString).deletingLastPathComponent
      if p.isEmpty { return true }
    }
  }

  /// `LD_LIBRARY_PATH=...` when the environment sets it to something: the loader may take
  /// a library from another directory (`ClientIdentity.loaderPath`).
  static func loaderPath(environ: [UInt8]) -> String? {
    guard let v = environment(environ, "LD_LIBRARY_PATH"), v.contains(where: { $0 != ":" && $0 != " " }) else {
      return nil
    }
    return String("LD_LIBRARY_PATH=\(v)".prefix(256))
  }
}
