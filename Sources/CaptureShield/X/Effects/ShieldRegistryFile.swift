// The shield registry of record: which windows are our shields, in a file only this user
// can write (`ForgedRegistryTests`).
//
// `_CAPTURE_SHIELD_SHIELDS` on the root lists the (shield, target) pairs for tools and tests,
// but any client of the display can rewrite a root property: a forged list plus a fake
// shield (named and marked like ours, with an empty shape) was adopted by a restarted
// daemon, and every frame leaked. A daemon adopts only what an earlier daemon of the same
// user wrote here: `$XDG_RUNTIME_DIR/captureshield/shields-DISPLAY` (or
// `/tmp/captureshield-UID/` without a runtime directory), mode 0600 in a directory of ours
// that others cannot write.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The (shield, target) pairs of one display, in a 0600 file of this user.
struct ShieldRegistryFile: Sendable {
  let path: String

  /// The file for `display`, in a directory created (0700) and checked (ours, not writable
  /// by others); nil when there is no such directory.
  static func forDisplay(_ display: String, environment: [String: String]) -> ShieldRegistryFile? {
    let base: String
    if let r = environment["XDG_RUNTIME_DIR"], r.hasPrefix("/") {
      base = r + "/captureshield"
    } else {
      base = "/tmp/captureshield-\(getuid())"
    }
    mkdir(base, 0o700)
    guard ownedAndPrivate(base, directory: true) else { return nil }
    let name = String(display.map { $0 == "/" ? "_" : $0 })
    return ShieldRegistryFile(path: base + "/shields-" + name)
  }

  /// Whether `path` (not a symbolic link) is a directory or regular file of this user that
  /// nobody else can write (a file: nobody else can read either).
  static func ownedAndPrivate(_ path: String, directory: Bool) -> Bool {
    var st = stat()
    guard lstat(path, &st) == 0, st.st_uid == getuid() else { return false }
    let type = st.st_mode & S_IFMT
    if directory { return type == S_IFDIR && st.st_mode & 0o022 == 0 }
    return type == S_IFREG && st.st_mode & 0o077 == 0
  }

  /// Replaces the file with `pairs` (shield, target, ...), atomically. False on failure.
  @discardableResult
  func write(_ pairs: [UInt32]) -> Bool {
    var text = "captureshield-shields 1\n"
    for i in stride(from: 0, to: pairs.count - 1, by: 2) {
      text += "0x" + String(pairs[i], radix: 16) + " 0x" + String(pairs[i + 1], radix: 16) + "\n"
    }
    let tmp = path + ".new"
    unlink(tmp)
    let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    let bytes = Array(text.utf8)
    let ok = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
    close(fd)
    guard ok, rename(tmp, path) == 0 else {
      unlink(tmp)
      return false
    }
    return true
  }

  /// The pairs an earlier daemon wrote; empty when there is no file or it is not this
  /// user's private file.
  func read() -> [(shield: UInt32, target: WindowID)] {
    guard Self.ownedAndPrivate(path, directory: false) else { return [] }
    let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var data: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while data.count < 1 << 20 {
      let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      guard n > 0 else { break }
      data += buf[0..<n]
    }
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
    guard lines.first == "captureshield-shields 1" else { return [] }
    return lines.dropFirst().compactMap { line in
      let f = line.split(separator: " ")
      guard f.count == 2, let s = Self.hex(f[0]), let t = Self.hex(f[1]), s != 0, t != 0 else { return nil }
      return (s, t)
    }
  }

  private static func hex(_ s: Substring) -> UInt32? {
    guard s.hasPrefix("0x") else { return nil }
    return UInt32(s.dropFirst(2), radix: 16)
  }
}
