// Seeing X clients before they connect (`capture.quarantineOnLaunch`).
//
// The quarantine starts at a client's ClientStarted and races the client's first requests
// (see `RecordPump`). Every X client this desktop runs is linked against libxcb (Xlib is
// built on it), and the dynamic loader opens that file when the process starts, before the
// program's `main` runs and so before it can connect: xwd, scrot, maim and ImageMagick's
// `import` open it 0.2-18 ms before their ClientStarted reaches us (measured on this project's
// test machine). An inotify watch on the library reports every such open (`IN_OPEN`,
// unprivileged: the file only has to be readable), so the pump can put the shields up at
// the launch and the client connects to a screen that is already shielded.
//
// Earlier still, an exec opens the program file itself, 0.4-4 ms before the loader opens
// libxcb (xwd, scrot, import, measured here). `XClientPrograms` knows, from the programs'
// ELF headers, which programs in the program directories load libxcb; each of those files
// gets a watch of its own (other programs' starts never wake the pump; the directories are
// watched only for new programs to classify). The start of such a program is the launch,
// and the libxcb open that follows it is not a second one.
//
// What it does not see: clients that do not load this copy of libxcb (a Flatpak or Snap
// runtime's own copy, static binaries, pure-language X clients such as python-xlib), which
// keep the ClientStarted quarantine; and it sees processes that load libxcb without
// connecting (`ldd`, a transcoding ffmpeg), and reads of an X client program's file (a
// backup, a package check), which count as its start. The loop then looks at the processes
// that can be behind a launch (`ProcessInfoReader+Launches.swift`): one that has exited, names another
// display or is shieldctl ends it at once (`Engine.launchOver`); one of this display that
// stays and never connects keeps the shields up until the quarantine duration ends.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// An inotify watch on the X client library the daemon itself loaded. Reads are
/// non-blocking; one owner at a time (the pump thread).
final class LaunchWatch: Sendable {
  /// Why the watch could not be set up.
  enum SetupError: Error, CustomStringConvertible {
    case libraryNotFound
    case inotify(String, errno: Int32)

    var description: String {
      switch self {
      case .libraryNotFound: return "libxcb is not among this process's mapped files (/proc/self/maps)"
      case .inotify(let what, let e): return "\(what): \(String(cString: strerror(e)))"
      }
    }
  }

  /// The inotify descriptor: readable when a launch was seen.
  let fileDescriptor: Int32
  /// The library's path as the loader names it (the soname link: a package upgrade that
  /// replaces the file is followed by watching the path again).
  let path: String
  /// The kernel dropped the watch and setting it again failed (the file is missing halfway
  /// through an upgrade, say): `retry` until it is back.
  var lost: Bool { pump.withLock { $0.lost } }
  /// The program directories watched for new programs (to classify), by watch descriptor.
  let programDirectories: [Int32: String]
  /// Which programs in `programDirectories` load libxcb (filled by a background scan).
  let programs: XClientPrograms?
  /// What the classification queue and the pump thread share.
  private struct State {
    /// The X client programs watched for opens (each by its own watch, so that other
    /// programs' starts never wake the pump): watch descriptor → path, and back. Set from
    /// the classification queue, read by the pump thread.
    var programWatches: [Int32: String] = [:]
    var programWatchOfPath: [String: Int32] = [:]
    /// The token of `programs.observe`: set at the end of `init`, read by `deinit`.
    var observer: Int?
    /// The programs watched because the history marks them as capturers (`watchLearned`).
    var learned: Set<String> = []
  }
  private let state = Locked(State())
  /// What only the watch's owner (the pump thread) reads and writes. Its lock is never
  /// contended; it makes that sharing checkable (the class is `Sendable`) and is taken for
  /// each access, never across a read.
  private struct PumpState {
    /// See `lost`.
    var lost = false
    /// Starts of X client programs reported as launches whose libxcb open has not come yet
    /// (monotonic seconds): that open belongs to the same process and is not a second launch.
    var startsAwaitingLibrary: [Double] = []
    /// The library's watch descriptor (a new one after `retry`; -1: none is watched).
    var libraryWatch: Int32
  }
  private let pump: Locked<PumpState>
  /// How long a program start waits for its libxcb open (the loader opens it within
  /// milliseconds; a start that never opens it was not an exec, say `ldd` reading the file).
  static let libraryOpenWindow = 0.5

  /// Watches the libxcb this process has mapped, by its soname link in the same directory
  /// when that exists (`.../libxcb.so.1`, what the loader opens), else as mapped; and the
  /// program directories (standard and `PATH`), whose X client programs are found by a
  /// background scan.
  convenience init() throws {
    // /proc files report size 0: Foundation's whole-file read would get nothing.
    let maps = String(decoding: ProcessInfoReader.readSmallFile("/proc/self/maps", limit: 8 << 20) ?? [], as: UTF8.self)
    guard let lib = LaunchWatch.mappedLibxcb(maps: maps) else { throw SetupError.libraryNotFound }
    let soname = String(lib[..<(lib.lastIndex(of: "/").map { lib.index(after: $0) } ?? lib.startIndex)]) + "libxcb.so.1"
    try self.init(
      path: access(soname, R_OK) == 0 ? soname : lib, programDirectories: XClientPrograms.programDirectories(),
      programs: XClientPrograms.shared)
  }

  /// Watches `path` (any file: tests use their own) and, with `programs`, starts of the X
  /// client programs in `programDirectories` (directories that do not exist are skipped;
  /// two paths of one directory are watched once).
  init(path: String, programDirectories: [String] = [], programs: XClientPrograms? = nil) throws {
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { throw SetupError.inotify("inotify_init1", errno: errno) }
    let wd = inotify_add_watch(fd, path, LaunchWatch.mask)
    guard wd >= 0 else {
      let e = errno
      close(fd)
      throw SetupError.inotify("inotify_add_watch \(path)", errno: e)
    }
    var dirs: [Int32: String] = [:]
    if programs != nil {
      for dir in programDirectories {
        guard let real = realpath(dir, nil) else { continue }
        let canonical = String(cString: real)
        free(real)
        let d = inotify_add_watch(fd, canonical, LaunchWatch.directoryMask)
        if d >= 0, dirs[d] == nil { dirs[d] = canonical }
      }
    }
    self.fileDescriptor = fd
    self.path = path
    self.pump = Locked(PumpState(libraryWatch: wd))
    self.programDirectories = dirs
    self.programs = programs
    if let programs {
      let watched = Set(dirs.values)
      programs.scanInBackground(watched.sorted())
      let observer = programs.observe { [weak self] dir, name, isClient in
        if watched.contains(dir) { self?.watchProgram(dir + "/" + name, isClient) }
      }
      state.withLock { $0.observer = observer }
    }
  }

  /// Watches only the starts of the programs `watchLearned` names (`capture.learn` without
  /// quarantine): no library, no program directories.
  init(onlyPrograms: ()) throws {
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { throw SetupError.inotify("inotify_init1", errno: errno) }
    self.fileDescriptor = fd
    self.path = ""
    self.pump = Locked(PumpState(libraryWatch: -1))
    self.programDirectories = [:]
    self.programs = nil
  }

  /// Watches the programs the history marks as capturers (`Engine.learnedLaunchPaths`:
  /// executables, and scripts, whose exec opens them too), from now on. A program no longer
  /// named stops being watched unless the directories' scan watches it (`programs`).
  func watchLearned(_ paths: [String]) {
    let new = Set(paths)
    let old = state.withLock { s in
      let old = s.learned
      s.learned = new
      return old
    }
    for p in new.subtracting(old).sorted() { watchProgram(p, true) }
    if programs == nil {
      for p in old.subtracting(new).sorted() { watchProgram(p, false) }
    }
  }

  deinit {
    if let observer = state.withLock({ $0.observer }) { programs?.stopObserving(observer) }
    close(fileDescriptor)
  }

  /// Watches an X client program's file for opens (an exec), or stops watching a program
  /// that is no longer one.
  private func watchProgram(_ path: String, _ isClient: Bool) {
    state.withLock { s in
      if isClient {
        let wd = inotify_add_watch(fileDescriptor, path, LaunchWatch.mask)
        guard wd >= 0 else { return }
        if let old = s.programWatchOfPath[path], old != wd { s.programWatches[old] = nil }
        s.programWatches[wd] = path
        s.programWatchOfPath[path] = wd
      } else if let wd = s.programWatchOfPath.removeValue(forKey: path) {
        inotify_rm_watch(fileDescriptor, wd)
        s.programWatches[wd] = nil
      }
    }
  }

  /// The watched program at a watch descriptor (the pump thread's lookup).
  private func watchedProgram(_ wd: Int32) -> String? {
    state.withLock { $0.programWatches[wd] }
  }

  /// Forgets a program watch the kernel dropped (the file was deleted or replaced; a
  /// replacement is classified, and watched again, from its directory's event).
  private func forgetProgramWatch(_ wd: Int32) {
    state.withLock { s in
      if let path = s.programWatches.removeValue(forKey: wd), s.programWatchOfPath[path] == wd {
        s.programWatchOfPath[path] = nil
      }
    }
  }

  /// How many X client programs are watched now.
  var watchedPrograms: Int {
    state.withLock { $0.programWatches.count }
  }

  static let mask = UInt32(IN_OPEN)
  /// New programs in a program directory (a package installs a file and renames it into
  /// place), to classify.
  static let directoryMask = UInt32(IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR)

  /// The core libxcb's path among the mapped files of `/proc/self/maps` text (not
  /// `libxcb-record.so.0` and the other extension libraries).
  static func mappedLibxcb(maps: String) -> String? {
    for line in maps.split(separator: "\n") {
      guard let slash = line.firstIndex(of: "/") else { continue }
      let path = String(line[slash...])
      if let name = path.split(separator: "/").last, name.hasPrefix("libxcb.so.") { return path }
    }
    return nil
  }

  /// Reads every pending event; returns the launches they report, in order: starts of X
  /// client programs (the program's file name), and opens of libxcb that no such start
  /// announced (nil: a program outside the watched directories, or one the scan did not
  /// know). The kernel merges an event with the identical one just before it while neither
  /// was read: launches within one read of the pump can count as one (the later ones keep
  /// their ClientStarted quarantine). A lost event (queue overflow) or a watch the kernel
  /// dropped (the file was replaced by an upgrade) counts as a launch (nil), and the watch
  /// is set again on the path.
  func readLaunches(now: Double = LaunchWatch.monotonicSeconds()) -> [String?] {
    var launches: [String?] = []
    let size = 16384
    let buf = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
    defer { buf.deallocate() }
    var dropped = false
    pump.withLock { p in p.startsAwaitingLibrary.removeAll { now - $0 > LaunchWatch.libraryOpenWindow } }
    while true {
      let n = read(fileDescriptor, buf, size)
      guard n > 0 else { break }
      var off = 0
      while off + MemoryLayout<inotify_event>.size <= n {
        let e = buf.load(fromByteOffset: off, as: inotify_event.self)
        let nameStart = off + MemoryLayout<inotify_event>.size
        off = nameStart + Int(e.len)
        if e.mask & UInt32(IN_Q_OVERFLOW) != 0 {
          launches.append(nil)  // events were lost: fail safe
        } else if e.wd == pump.withLock({ $0.libraryWatch }) {
          if e.mask & UInt32(IN_OPEN) != 0 {
            pump.withLock { p in
              if p.startsAwaitingLibrary.isEmpty { launches.append(nil) } else { p.startsAwaitingLibrary.removeFirst() }
            }
          }
          if e.mask & UInt32(IN_IGNORED) != 0 { dropped = true }
        } else if let program = watchedProgram(e.wd) {
          if e.mask & UInt32(IN_OPEN) != 0 {
            launches.append(program.split(separator: "/").last.map(String.init) ?? program)
            pump.withLock { $0.startsAwaitingLibrary.append(now) }
          }
          if e.mask & UInt32(IN_IGNORED) != 0 { forgetProgramWatch(e.wd) }
        } else if let dir = programDirectories[e.wd], let programs, e.len > 0, off <= n {
          let name = String(cString: buf.advanced(by: nameStart).assumingMemoryBound(to: CChar.self))
          programs.classifyInBackground(directory: dir, name: name)
        }
      }
    }
    if dropped {
      pump.withLock { $0.lost = true }
      retry()
      launches.append(nil)  // the file changed under us: a launch may have been missed; fail safe
    }
    return launches
  }

  static func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
  }

  /// Sets the watch again after the kernel dropped it; `lost` says whether that failed.
  func retry() {
    guard lost, !path.isEmpty else { return }
    let wd = inotify_add_watch(fileDescriptor, path, LaunchWatch.mask)
    pump.withLock { p in
      p.lost = wd < 0
      if wd >= 0 { p.libraryWatch = wd }
    }
  }
}
