import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Reads `/proc` for a PID: executable, process name, uid, command line. Plain `readlink`
/// and `read` (no Foundation file APIs): it runs for every client that connects, and the
/// Foundation path cost a third of the daemon's time per client.
enum ProcessInfoReader {
  static func identity(pid: Int?, failure: String? = nil) -> ClientIdentity {
    guard let pid else { return ClientIdentity(failure: failure ?? "no PID (remote or unknown client)") }
    let base = "/proc/\(pid)"
    let status = readSmallFile(base + "/status")
    var id = parse(
      pid: pid, exe: readLink(base + "/exe"), comm: readSmallFile(base + "/comm"),
      status: status, cmdline: readSmallFile(base + "/cmdline", limit: 64 * 1024))
    if id.failure == nil {
      let environ = readSmallFile(base + "/environ", limit: 256 * 1024)
      id.injection = injection(environ: environ, status: status)
      id.loaderPath = environ.flatMap { loaderPath(environ: $0) }
      var st = stat()
      let exeStat = stat(base + "/exe", &st) == 0
      if exeStat { id.exeRootOwned = st.st_uid == 0 && st.st_mode & 0o022 == 0 }
      id.script = script(of: id, base: base)
      if let script = id.script {
        var ss = stat()
        id.programFile = stat(script, &ss) == 0 ? programFile(ss) : nil
      } else if exeStat, id.exe.flatMap(InterpretedProgram.family(ofExecutable:)) == nil {
        // An interpreter with no script file (`python3 -c ...`, a REPL) is no program of its
        // own to learn: learning python3 would pre-empt every python program's start.
        id.programFile = programFile(st)
      }
    }
    if let stat = readSmallFile(base + "/stat"), let ticks = startTicks(stat: stat) {
      var t = timespec()
      clock_gettime(CLOCK_BOOTTIME, &t)
      let boot = Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
      id.processAge = max(0, boot - Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK))))
    }
    return id
  }

  /// Why a process may run code that is not its program's (`ClientIdentity.injection`):
  /// the dynamic loader's injection variables in its initial environment (`/proc/PID/environ`;
  /// an `LD_LIBRARY_PATH` counts when a directory of it fails `isSafeDirectory`,
  /// nil: unreadable, another user's process), or a tracer (`TracerPid` in
  /// `/proc/PID/status`). Nil when none.
  static func injection(
    environ: [UInt8]?, status: [UInt8]?, isSafeDirectory: (String) -> Bool = rootOnly
  ) -> String? {
    if let status {
      for line in status.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("TracerPid:".utf8)) {
        let v = String(decoding: line.dropFirst(10), as: UTF8.self).trimmingCharacters(in: .whitespaces)
        if let tracer = Int(v), tracer != 0 { return "traced by PID \(tracer)" }
        break
      }
    }
    guard let environ else { return "environment unreadable" }
    var libraryPath: String?
    for entry in environ.split(separator: 0) {
      for name in ["LD_PRELOAD=", "LD_AUDIT="] where entry.starts(with: Array(name.utf8)) {
        let value = entry.dropFirst(name.utf8.count)
        if value.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: ":") }) {
          return String(decoding: entry.prefix(256), as: UTF8.self)
        }
      }
      if entry.starts(with: Array("LD_LIBRARY_PATH=".utf8)) {
        libraryPath = String(decoding: entry.dropFirst(16), as: UTF8.self)
      }
    }
    // A library path others can write: the loader would take libxcb from there.
    return libraryPath.flatMap { unsafeLoaderDirectory($0, isSafe: isSafeDirectory) }
      .map { "LD_LIBRARY_PATH names \($0)" }
  }

  /// Whether the process is stopped (state `T` or `t` in `/proc/PID/stat`: SIGSTOP, a
  /// debugger).
  static func isStopped(pid: Int) -> Bool {
    guard let stat = readSmallFile("/proc/\(pid)/stat") else { return false }
    return processState(stat: stat).map { $0 == UInt8(ascii: "T") || $0 == UInt8(ascii: "t") } ?? false
  }

  /// The parent's PID: field 4 of `/proc/PID/stat` (after the parenthesised command name).
  static func parentPID(stat: [UInt8]) -> Int? {
    guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
    let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
    guard fields.count > 1 else { return nil }
    return Int(String(decoding: fields[1], as: UTF8.self))
  }

  /// Who started the process `pid`: its ancestors (PPid chain) up to PID 1, each with its
  /// program, user and `standing(pid)` (how this display sees it). At most 64 steps.
  static func origin(pid: Int, standing: (Int) -> CompositorOrigin.Standing) -> CompositorOrigin {
    var ancestors: [CompositorOrigin.Ancestor] = []
    var current = pid
    for _ in 0..<64 {
      guard let bytes = readSmallFile("/proc/\(current)/stat"), let parent = parentPID(stat: bytes) else {
        return CompositorOrigin(pid: pid, ancestors: ancestors, complete: false)
      }
      if parent <= 1 { return CompositorOrigin(pid: pid, ancestors: ancestors, complete: true) }
      let base = "/proc/\(parent)"
      let id = parse(
        pid: parent, exe: readLink(base + "/exe"), comm: nil, status: readSmallFile(base + "/status"), cmdline: nil)
      var st = stat()
      let rootOwned = stat(base + "/exe", &st) == 0 ? st.st_uid == 0 && st.st_mode & 0o022 == 0 : nil
      ancestors.append(
        CompositorOrigin.Ancestor(
          pid: parent, exe: id.exe, uid: id.uid, exeRootOwned: rootOwned, standing: standing(parent)))
      current = parent
    }
    return CompositorOrigin(pid: pid, ancestors: ancestors, complete: false)
  }

  /// Field 3 of `/proc/PID/stat` (after the parenthesised command name).
  static func processState(stat: [UInt8]) -> UInt8? {
    guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
    return stat[(close + 1)...].split(separator: UInt8(ascii: " ")).first?.first
  }

  /// The process's start time, in clock ticks after boot: field 22 of `/proc/PID/stat`
  /// (counted after the command name, which is in parentheses and may hold spaces).
  static func startTicks(stat: [UInt8]) -> UInt64? {
    guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
    let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
    guard fields.count > 19 else { return nil }
    return UInt64(String(decoding: fields[19], as: UTF8.self))
  }

  /// Builds the identity from the raw contents of `/proc/PID/{exe,comm,status,cmdline}`
  /// (nil: could not be read).
  static func parse(pid: Int, exe: String?, comm: [UInt8]?, status: [UInt8]?, cmdline: [UInt8]?) -> ClientIdentity {
    var id = ClientIdentity(pid: pid)
    id.exe = exe
    if let comm {
      // The kernel ends it with one newline (Foundation's trimming was a tenth of the lookup).
      var end = comm.count
      while end > 0, comm[end - 1] == UInt8(ascii: "\n") || comm[end - 1] == UInt8(ascii: "\r") { end -= 1 }
      id.comm = String(decoding: comm[..<end], as: UTF8.self)
    }
    if let status {
      // "Uid:\t<real>\t<effective>\t<saved>\t<fs>"
      for line in status.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("Uid:".utf8)) {
        let fields = line.dropFirst(4).split(whereSeparator: { $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: " ") })
        id.uid = fields.first.flatMap { Int(String(decoding: $0, as: UTF8.self)) }
        break
      }
    }
    if let cmdline {
      id.cmdline = cmdline.split(separator: 0).prefix(64).map { String(decoding: $0.prefix(1024), as: UTF8.self) }
    }
    if id.exe == nil && id.comm == nil { id.failure = "process \(pid) exited before it could be identified" }
    return id
  }

  /// The script an interpreter process runs (`InterpretedProgram`), as an absolute path
  /// (a relative one resolved against `/proc/PID/cwd`), when it names a regular file.
  static func script(of id: ClientIdentity, base: String) -> String? {
    guard let arg = InterpretedProgram.scriptArgument(exe: id.exe, cmdline: id.cmdline) else { return nil }
    var path = arg
    if !arg.hasPrefix("/") {
      guard let cwd = readLink(base + "/cwd") else { return nil }
      path = (cwd == "/" ? "" : cwd) + "/" + arg
    }
    path = InterpretedProgram.lexicallyNormalized(path)
    var st = stat()
    guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
    return path
  }

  static func readLink(_ path: String) -> String? {
    var buf = [CChar](repeating: 0, count: 4096)
    let n = readlink(path, &buf, buf.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The whole file, up to `limit` bytes (/proc files report size 0: read until EOF).
  static func readSmallFile(_ path: String, limit: Int = 16 * 1024) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while out.count < limit {
      let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, limit - out.count)) }
      if n < 0 { return out.isEmpty ? nil : out }
      if n == 0 { break }
      out += chunk[0..<n]
    }
    return out
  }

  /// A program file's identity for `capture.learn` (`CaptureHistory.ProgramFile`).
  static func programFile(_ st: stat) -> CaptureHistory.ProgramFile {
    CaptureHistory.ProgramFile(
      dev: UInt64(st.st_dev), ino: UInt64(st.st_ino), size: Int64(st.st_size),
      mtime: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec))
  }
}
