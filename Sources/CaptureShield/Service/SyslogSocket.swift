import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A connected, non-blocking `SOCK_DGRAM` unix socket to the syslog daemon.
final class SyslogSocket {
  static let defaultPath = "/dev/log"
  /// Environment variable that replaces `/dev/log` (for tests).
  static let pathVariable = "CAPTURESHIELD_SYSLOG_SOCKET"

  let path: String
  private var fd: Int32

  private init(path: String, fd: Int32) {
    self.path = path
    self.fd = fd
  }

  deinit { if fd >= 0 { close(fd) } }

  /// A socket connected to `path`, or why not.
  static func connect(path: String) -> Result<SyslogSocket, SyslogSocketError> {
    let fd = open(path: path)
    guard fd >= 0 else { return .failure(SyslogSocketError(reason: String(cString: strerror(-fd)))) }
    return .success(SyslogSocket(path: path, fd: fd))
  }

  /// A connected descriptor, or -errno.
  private static func open(path: String) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else { return -ENAMETOOLONG }
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return -errno }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in bytes.enumerated() { raw[i] = b }
      raw[bytes.count] = 0
    }
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard result == 0 else {
      let e = errno
      close(fd)
      return -e
    }
    return fd
  }

  /// Sends one message. A full socket drops it (the daemon never blocks on logging); a
  /// syslog daemon that restarted is reconnected once.
  func send(_ message: String) {
    let bytes = Array(message.utf8)
    for attempt in 0..<2 {
      if fd < 0 { fd = Self.open(path: path) }
      guard fd >= 0 else { return }
      let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if n >= 0 { return }
      let e = errno
      guard attempt == 0, e == ECONNREFUSED || e == ENOTCONN || e == ENOENT else { return }
      close(fd)
      fd = -1
    }
  }
}

struct SyslogSocketError: Error, CustomStringConvertible {
  var reason: String
  var description: String { reason }
}
