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
// What it does not see: clients that do not load this copy of libxcb (a Flatpak or Snap
// runtime's own copy, static binaries, pure-language X clients such as python-xlib), which
// keep the ClientStarted quarantine; and it sees processes that load libxcb without
// connecting (`ldd`, a transcoding ffmpeg), whose launch keeps the shields up until the
// quarantine duration ends. README "Capture detection" describes the cost.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// An inotify watch on the X client library the daemon itself loaded. Reads are
/// non-blocking; one owner at a time (the pump thread).
final class LaunchWatch: @unchecked Sendable {
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
  private(set) var lost = false

  /// Watches the libxcb this process has mapped, by its soname link in the same directory
  /// when that exists (`.../libxcb.so.1`, what the loader opens), else as mapped.
  convenience init() throws {
    // /proc files report size 0: Foundation's whole-file read would get nothing.
    let maps = String(decoding: ProcessInfoReader.readSmallFile("/proc/self/maps", limit: 8 << 20) ?? [], as: UTF8.self)
    guard let lib = LaunchWatch.mappedLibxcb(maps: maps) else { throw SetupError.libraryNotFound }
    let soname = String(lib[..<(lib.lastIndex(of: "/").map { lib.index(after: $0) } ?? lib.startIndex)]) + "libxcb.so.1"
    try self.init(path: access(soname, R_OK) == 0 ? soname : lib)
  }

  /// Watches `path` (any file: tests use their own).
  init(path: String) throws {
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { throw SetupError.inotify("inotify_init1", errno: errno) }
    guard inotify_add_watch(fd, path, LaunchWatch.mask) >= 0 else {
      let e = errno
      close(fd)
      throw SetupError.inotify("inotify_add_watch \(path)", errno: e)
    }
    self.fileDescriptor = fd
    self.path = path
  }

  deinit { close(fileDescriptor) }

  static let mask = UInt32(IN_OPEN)

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

  /// Reads every pending event; returns how many opens (launches) they report. The kernel
  /// merges an open with the identical one before it while neither was read: launches
  /// within one read of the pump count as one (the later ones keep their ClientStarted
  /// quarantine). A watch
  /// the kernel dropped (the file was replaced by an upgrade) is set again on the path.
  func readLaunches() -> Int {
    var launches = 0
    let size = 4096
    let buf = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
    defer { buf.deallocate() }
    var dropped = false
    while true {
      let n = read(fileDescriptor, buf, size)
      guard n > 0 else { break }
      var off = 0
      while off + MemoryLayout<inotify_event>.size <= n {
        let e = buf.load(fromByteOffset: off, as: inotify_event.self)
        if e.mask & UInt32(IN_OPEN) != 0 { launches += 1 }
        if e.mask & UInt32(IN_IGNORED) != 0 { dropped = true }
        off += MemoryLayout<inotify_event>.size + Int(e.len)
      }
    }
    if dropped {
      lost = true
      retry()
      launches += 1  // the file changed under us: a launch may have been missed; fail safe
    }
    return launches
  }

  /// Sets the watch again after the kernel dropped it; `lost` says whether that failed.
  func retry() {
    guard lost else { return }
    lost = inotify_add_watch(fileDescriptor, path, LaunchWatch.mask) < 0
  }
}
