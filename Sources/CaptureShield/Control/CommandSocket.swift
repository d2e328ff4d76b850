// The command channel's sockets: the daemon's listening socket (never blocks its loop) and
// the CLI's one-shot request. Who may send commands is `CommandChannel.refusal`.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A command's wire form: the five 32-bit words of `CommandCode.encode`, little-endian, as
/// one SOCK_SEQPACKET message (the sender pid word is ignored: the kernel says who sent it).
enum CommandWire {
  static func encode(_ command: DaemonCommand) -> [UInt8] {
    CommandCode.encode(command, senderPID: 0).flatMap { w in (0..<4).map { UInt8(truncatingIfNeeded: w >> ($0 * 8)) } }
  }

  static func decode(_ bytes: [UInt8]) -> DaemonCommand? {
    guard bytes.count == 20 else { return nil }
    let words = (0..<5).map { i in (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[i * 4 + $1]) << ($1 * 8) } }
    return CommandCode.decode(words)?.0
  }
}

/// Builds a `sockaddr_un` for `path` and calls `body` with it; nil when the path is too long.
private func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R? {
  var addr = sockaddr_un()
  addr.sun_family = sa_family_t(AF_UNIX)
  let bytes = Array(path.utf8)
  guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return nil }
  withUnsafeMutableBytes(of: &addr.sun_path) { raw in
    for (i, b) in bytes.enumerated() { raw[i] = b }
    raw[bytes.count] = 0
  }
  let length = socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path)! + bytes.count + 1)
  return withUnsafePointer(to: &addr) { p in p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) } }
}

/// The socket path for the display `x` is connected to (see `CommandChannel`).
func daemonCommandSocketPath(
  display: String, screen: Int32, environment: [String: String] = ProcessInfo.processInfo.environment
) -> String {
  CommandChannel.directory(environment: environment, uid: geteuid()) + "/"
    + CommandChannel.socketName(display: display, screen: Int(screen))
}

/// The daemon's end: a listening SOCK_SEQPACKET socket in a 0700 directory of its own, and
/// the connections accepted from it until each has sent its one command. Everything is
/// non-blocking; the loop polls `descriptors`.
final class CommandServer {
  /// One accepted connection: who it is (SO_PEERCRED at accept) and until when it may take
  /// to send its command.
  struct Connection {
    let fd: Int32
    let peer: CommandChannel.Peer
    let refusal: String?
    /// Why a query (`titles`) is refused: only another user is (`CommandChannel.queryRefusal`).
    let queryRefusal: String?
    let deadline: MonotonicTime
  }

  /// What happened on the socket, for the loop to act on and audit.
  enum Outcome {
    case command(DaemonCommand, CommandChannel.Peer, reply: (CommandChannel.Reply) -> Void)
    case refused(CommandChannel.Peer, why: String)
  }

  let path: String
  private let listener: Int32
  private(set) var connections: [Connection] = []
  private let uid = geteuid()
  private let ownExe: String?
  private let ownFile: (dev: UInt64, ino: UInt64)?
  /// At most this many connections wait for their command; more are closed (oldest first).
  private let maxConnections = 16

  /// Creates the directory (0700, ours) and the socket, replacing a stale one: the caller
  /// owns the display's manager selection, so no other daemon of this display listens.
  init(path: String) throws(XError) {
    self.path = path
    let directory = (path as NSString).deletingLastPathComponent
    if mkdir(directory, 0o700) != 0 && errno != EEXIST {
      throw .failed("cannot create \(directory): \(String(cString: strerror(errno)))")
    }
    var st = stat()
    guard lstat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
      throw .failed("\(directory) is not a directory")
    }
    guard st.st_uid == geteuid() else { throw .failed("\(directory) belongs to uid \(st.st_uid), not to us") }
    if st.st_mode & 0o077 != 0 { _ = chmod(directory, 0o700) }
    ownExe = ProcessInfoReader.readLink("/proc/self/exe")
    var own = stat()
    ownFile = stat("/proc/self/exe", &own) == 0 ? (UInt64(own.st_dev), UInt64(own.st_ino)) : nil
    let fd = socket(
      AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { throw .failed("cannot create the command socket: \(String(cString: strerror(errno)))") }
    unlink(path)
    let bound = withAddress(path) { bind(fd, $0, $1) }
    guard bound == 0, listen(fd, 16) == 0 else {
      let why = bound == nil ? "path too long" : String(cString: strerror(errno))
      close(fd)
      throw .failed("cannot listen on \(path): \(why)")
    }
    _ = chmod(path, 0o600)
    listener = fd
  }

  /// The descriptors to poll for input: the listener, then each waiting connection.
  var descriptors: [Int32] { [listener] + connections.map(\.fd) }

  /// When the oldest waiting connection times out.
  var nextDeadline: MonotonicTime? { connections.map(\.deadline).min() }

  /// Accepts new connections (when `listenerReady`), reads the commands of `ready` ones,
  /// and closes those past their deadline. Each command is handed to the caller with a
  /// reply function (called once, then the connection is closed).
  func service(listenerReady: Bool, ready: Set<Int32>, now: MonotonicTime) -> [Outcome] {
    var out: [Outcome] = []
    if listenerReady { acceptAll(now: now) }
    var keep: [Connection] = []
    for c in connections {
      guard ready.contains(c.fd) else {
        if now >= c.deadline { close(c.fd) } else { keep.append(c) }
        continue
      }
      var buf = [UInt8](repeating: 0, count: 64)
      let n = recv(c.fd, &buf, buf.count, Int32(MSG_DONTWAIT))
      if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
        keep.append(c)
        continue
      }
      guard n > 0 else {  // closed without a command
        close(c.fd)
        continue
      }
      let fd = c.fd
      let send: (CommandChannel.Reply) -> Void = { reply in
        let bytes = reply.wire
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        close(fd)
      }
      let decoded = CommandWire.decode(Array(buf[0..<n]))
      if decoded == .titles, let why = c.queryRefusal {
        send(.refused(why))
        out.append(.refused(c.peer, why: why))
      } else if decoded == .titles {
        out.append(.command(.titles, c.peer, reply: send))
      } else if let why = c.refusal {
        send(.refused(why))
        out.append(.refused(c.peer, why: why))
      } else if let command = decoded {
        out.append(.command(command, c.peer, reply: send))
      } else {
        send(.refused("malformed command (\(n) bytes)"))
        out.append(.refused(c.peer, why: "malformed command (\(n) bytes)"))
      }
    }
    connections = keep
    return out
  }

  private func acceptAll(now: MonotonicTime) {
    while true {
      let fd = accept(listener, nil, nil)
      guard fd >= 0 else { return }
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      _ = fcntl(fd, F_SETFL, O_NONBLOCK)
      // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc hides it behind _GNU_SOURCE).
      var cred: [UInt32] = [0, 0, 0]
      var len = socklen_t(12)
      guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0, len == 12 else {
        close(fd)
        continue
      }
      let pid = Int(Int32(bitPattern: cred[0]))
      let peerUID = cred[1]
      let exePath = "/proc/\(pid)/exe"
      var st = stat()
      let same = stat(exePath, &st) == 0 && ownFile.map { $0 == (UInt64(st.st_dev), UInt64(st.st_ino)) } == true
      let peer = CommandChannel.Peer(pid: pid, uid: peerUID, exe: ProcessInfoReader.readLink(exePath))
      let refusal = CommandChannel.refusal(peer: peer, daemonUID: uid, daemonExe: ownExe, sameFile: same)
      if connections.count >= maxConnections { close(connections.removeFirst().fd) }
      connections.append(
        Connection(
          fd: fd, peer: peer, refusal: refusal, queryRefusal: CommandChannel.queryRefusal(peer: peer, daemonUID: uid),
          deadline: now + .seconds(2)))
    }
  }

  /// Closes everything and removes the socket file.
  func shutdown() {
    for c in connections { close(c.fd) }
    connections = []
    close(listener)
    unlink(path)
  }
}

/// The CLI's end: one command, one reply.
enum CommandClient {
  enum Result {
    case reply(CommandChannel.Reply)
    /// No socket at the path, or nobody listens on it.
    case noSocket(String)
    /// Sent, but no reply within the timeout (a stopped or stuck daemon).
    case timedOut
    case failed(String)
  }

  static func request(_ command: DaemonCommand, path: String, timeout: Duration) -> Result {
    let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return .failed("cannot create a socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    guard let connected = withAddress(path, { connect(fd, $0, $1) }) else { return .failed("path too long: \(path)") }
    if connected != 0 {
      let e = errno
      if e == ENOENT || e == ECONNREFUSED || e == ENOTDIR { return .noSocket(String(cString: strerror(e))) }
      return .failed("cannot connect to \(path): \(String(cString: strerror(e)))")
    }
    let bytes = CommandWire.encode(command)
    let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard sent == bytes.count else { return .failed("cannot send to \(path): \(String(cString: strerror(errno)))") }
    let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    var r: Int32
    repeat { r = poll(&p, 1, ms) } while r < 0 && errno == EINTR
    guard r > 0 else { return .timedOut }
    var buf = [UInt8](repeating: 0, count: CommandChannel.Reply.limit + 1024)
    let n = recv(fd, &buf, buf.count, 0)
    guard n > 0 else { return .failed("the daemon closed the connection without a reply") }
    return .reply(CommandChannel.Reply(wire: Array(buf[0..<n])))
  }
}
