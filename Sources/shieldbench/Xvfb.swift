// The benchmark's own plumbing: child processes (posix_spawn, so tools start without a shell
// and are reaped the moment they exit), a private Xvfb, a small xcb client, and /proc readers.
import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

struct BenchError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Monotonic seconds (CLOCK_MONOTONIC).
func monotonicNow() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func sleepSeconds(_ s: Double) {
  guard s > 0 else { return }
  usleep(useconds_t(min(s, 3_600) * 1e6))
}

func median(_ values: [Double]) -> Double? {
  guard !values.isEmpty else { return nil }
  let s = values.sorted()
  let m = s.count / 2
  return s.count % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2
}

/// Finds an executable in PATH.
func findExecutable(_ name: String) -> String? {
  if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
  let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
  for dir in path.split(separator: ":") {
    let p = "\(dir)/\(name)"
    if access(p, X_OK) == 0 { return p }
  }
  return nil
}

/// A child process started with posix_spawn.
final class Child {
  let pid: pid_t
  let name: String
  private(set) var status: Int32?

  /// Starts `path` with `arguments`; `display` is set as DISPLAY; stdout/stderr go to the
  /// given files (nil: /dev/null); `passFD` is made the child's descriptor 3.
  init(
    _ path: String, _ arguments: [String], display: String?, stdout: String? = nil, stderr: String? = nil,
    passFD: Int32? = nil
  ) throws {
    name = (path as NSString).lastPathComponent
    var env = ProcessInfo.processInfo.environment
    if let display { env["DISPLAY"] = display }
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for p in argv { free(p) }
      for p in envp { free(p) }
    }
    var fa = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&fa)
    defer { posix_spawn_file_actions_destroy(&fa) }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&fa, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_addopen(&fa, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
    if let passFD { posix_spawn_file_actions_adddup2(&fa, passFD, 3) }
    var attr = posix_spawnattr_t()
    posix_spawnattr_init(&attr)
    defer { posix_spawnattr_destroy(&attr) }
    // A default signal mask and dispositions in the child.
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attr, &none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigdefault(&attr, &all)
    posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &fa, &attr, argv, envp)
    guard rc == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(rc)))") }
    self.pid = pid
  }

  /// Reaps the child if it exited; true when it has.
  @discardableResult
  func poll() -> Bool {
    if status != nil { return true }
    var st: Int32 = 0
    let r = waitpid(pid, &st, WNOHANG)
    if r == pid {
      status = st
      return true
    }
    if r < 0 {
      status = -1
      return true
    }
    return false
  }

  /// Waits (polling every 0.2 ms, so the exit is reaped at once) up to `timeout` seconds;
  /// kills the child when it is still running then. Returns whether it exited by itself.
  @discardableResult
  func wait(timeout: Double) -> Bool {
    let deadline = monotonicNow() + timeout
    while !poll() {
      if monotonicNow() > deadline {
        stop()
        return false
      }
      usleep(200)
    }
    return true
  }

  /// Exited normally with code 0.
  var succeeded: Bool {
    guard let s = status, s >= 0 else { return false }
    return s & 0x7f == 0 && (s >> 8) & 0xff == 0
  }

  /// SIGTERM, then SIGKILL after `grace` seconds; reaps it.
  func stop(grace: Double = 2) {
    guard !poll() else { return }
    kill(pid, SIGTERM)
    let deadline = monotonicNow() + grace
    while !poll() {
      if monotonicNow() > deadline {
        kill(pid, SIGKILL)
        while !poll() { usleep(1_000) }
        return
      }
      usleep(1_000)
    }
  }

  deinit { stop() }
}

/// A private Xvfb: `Xvfb -displayfd 3 -nolisten tcp -noreset`.
final class Xvfb {
  let child: Child
  let display: String
  let logPath: String

  init(directory: String, width: Int = 1280, height: Int = 800) throws {
    guard let path = findExecutable("Xvfb") else { throw BenchError("Xvfb is not installed") }
    var p: [Int32] = [0, 0]
    guard pipe(&p) == 0 else { throw BenchError("pipe failed") }
    _ = fcntl(p[0], F_SETFD, FD_CLOEXEC)
    // Keep the write end off descriptor 3, so dup2 onto 3 really clears close-on-exec.
    let w = fcntl(p[1], F_DUPFD_CLOEXEC, 10)
    close(p[1])
    logPath = directory + "/xvfb-\(UUID().uuidString.prefix(8)).log"
    do {
      // BENCH_XVFB_WRAPPER: a command the server runs under (scripts/profile-overhead.sh
      // runs it under callgrind), split on spaces; its first word is looked up in PATH.
      let args = ["-displayfd", "3", "-nolisten", "tcp", "-noreset", "-screen", "0", "\(width)x\(height)x24"]
      let wrapper = (ProcessInfo.processInfo.environment["BENCH_XVFB_WRAPPER"] ?? "").split(separator: " ").map(
        String.init)
      if let first = wrapper.first {
        guard let tool = findExecutable(first) else { throw BenchError("\(first) is not installed") }
        child = try Child(tool, Array(wrapper.dropFirst()) + [path] + args, display: nil, stderr: logPath, passFD: w)
      } else {
        child = try Child(path, args, display: nil, stderr: logPath, passFD: w)
      }
    } catch {
      close(p[0])
      close(w)
      throw error
    }
    close(w)
    defer { close(p[0]) }
    var text = ""
    let deadline = monotonicNow() + 60
    var buf = [UInt8](repeating: 0, count: 64)
    while !text.contains("\n") {
      var pfd = pollfd(fd: p[0], events: Int16(POLLIN), revents: 0)
      let left = Int32(max(0, (deadline - monotonicNow()) * 1000))
      guard left > 0, Glibc.poll(&pfd, 1, left) > 0 else { throw BenchError("Xvfb reported no display number") }
      let n = read(p[0], &buf, buf.count)
      guard n > 0 else { throw BenchError("Xvfb exited during start-up (log: \(logPath))") }
      text += String(decoding: buf[0..<n], as: UTF8.self)
    }
    guard let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
      throw BenchError("Xvfb wrote \(text.debugDescription)")
    }
    display = ":\(number)"
  }

  func stop() { child.stop() }
}

/// A small xcb client.
final class XClient {
  let conn: OpaquePointer
  let root: xcb_window_t
  let rootVisual: xcb_visualid_t
  let resourceMask: UInt32
  let display: String
  private var atomCache: [String: xcb_atom_t] = [:]

  init(display: String) throws {
    var screen: Int32 = 0
    guard let c = xcb_connect(display, &screen), xcb_connection_has_error(c) == 0 else {
      throw BenchError("cannot connect to X display \(display)")
    }
    conn = c
    self.display = display
    let setup = xcb_get_setup(c)!
    resourceMask = setup.pointee.resource_id_mask
    let it = xcb_setup_roots_iterator(setup)
    root = it.data.pointee.root
    rootVisual = it.data.pointee.root_visual
  }

  deinit { xcb_disconnect(conn) }

  var hasError: Bool { xcb_connection_has_error(conn) != 0 }
  func id() -> UInt32 { xcb_generate_id(conn) }
  func flush() { _ = xcb_flush(conn) }
  func base(of xid: UInt32) -> UInt32 { xid & ~resourceMask }

  /// One round trip (GetInputFocus): everything sent before it has been executed.
  func sync() {
    if let r = xcb_get_input_focus_reply(conn, xcb_get_input_focus(conn), nil) { free(r) }
  }

  /// Drops queued events and errors (this client never waits on them).
  func discardEvents() {
    while let ev = xcb_poll_for_event(conn) { free(ev) }
  }

  func atom(_ name: String) -> xcb_atom_t {
    if let a = atomCache[name] { return a }
    let ck = name.withCString { xcb_intern_atom(conn, 0, UInt16(strlen($0)), $0) }
    guard let r = xcb_intern_atom_reply(conn, ck, nil) else { return 0 }
    defer { free(r) }
    atomCache[name] = r.pointee.atom
    return r.pointee.atom
  }

  func extensionOpcode(_ name: String) -> UInt8? {
    let ck = name.withCString { xcb_query_extension(conn, UInt16(strlen($0)), $0) }
    guard let r = xcb_query_extension_reply(conn, ck, nil) else { return nil }
    defer { free(r) }
    return r.pointee.present != 0 ? r.pointee.major_opcode : nil
  }

  /// A property's bytes; nil when the window or the property does not exist.
  func property(_ window: xcb_window_t, _ atom: xcb_atom_t, maxBytes: UInt32 = 1 << 24) -> [UInt8]? {
    let ck = xcb_get_property(conn, 0, window, atom, 0, 0, (maxBytes + 3) / 4)
    guard let r = xcb_get_property_reply(conn, ck, nil) else { return nil }
    defer { free(r) }
    guard r.pointee.type != 0 else { return nil }
    let len = Int(xcb_get_property_value_length(r))
    guard len > 0, let p = xcb_get_property_value(r) else { return [] }
    return Array(UnsafeRawBufferPointer(start: p, count: len))
  }

  /// 32-bit values of a property.
  func cardinals(_ window: xcb_window_t, _ atom: xcb_atom_t) -> [UInt32] {
    guard let b = property(window, atom) else { return [] }
    return stride(from: 0, to: b.count - 3, by: 4).map {
      UInt32(b[$0]) | UInt32(b[$0 + 1]) << 8 | UInt32(b[$0 + 2]) << 16 | UInt32(b[$0 + 3]) << 24
    }
  }

  /// The map state (0 unmapped, 1 unviewable, 2 viewable); nil when the window is gone.
  func mapState(_ window: xcb_window_t) -> UInt8? {
    guard let r = xcb_get_window_attributes_reply(conn, xcb_get_window_attributes(conn, window), nil) else {
      return nil
    }
    defer { free(r) }
    return r.pointee.map_state
  }

  func setTitle(_ window: xcb_window_t, _ title: String) {
    let b = Array(title.utf8)
    xcb_change_property(conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, 39, 31, 8, UInt32(b.count), b)
  }

  func setSecureTag(_ window: xcb_window_t) {
    var one: UInt32 = 1
    xcb_change_property(
      conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, atom("_CAPTURE_SHIELD_SECURE"), 6, 32, 1, &one)
  }

  /// A top-level app window: solid colour, WM_CLASS, WM_NAME, optionally tagged secure, mapped.
  @discardableResult
  func appWindow(
    x: Int16, y: Int16, width: UInt16, height: UInt16, color: UInt32, title: String, wmClass: String = "BenchApp",
    secure: Bool = false, map: Bool = true
  ) -> xcb_window_t {
    let w = id()
    var values: [UInt32] = [color]
    xcb_create_window(
      conn, 0, w, root, x, y, width, height, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), rootVisual,
      XCB_CW_BACK_PIXEL.rawValue, &values)
    let cls = Array((wmClass.lowercased() + "\0" + wmClass + "\0").utf8)
    xcb_change_property(conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, 67, 31, 8, UInt32(cls.count), cls)
    setTitle(w, title)
    if secure { setSecureTag(w) }
    if map { xcb_map_window(conn, w) }
    return w
  }
}

/// What /proc says about one process (all its threads).
struct ProcSample {
  /// utime + stime, clock ticks (the whole process, from /proc/PID/stat).
  var ticks: Int
  /// Sum of the threads' run time in ns (/proc/PID/task/*/schedstat), finer than ticks.
  var runNanoseconds: UInt64
  /// Sum of the threads' voluntary and involuntary context switches.
  var voluntarySwitches: Int
  var involuntarySwitches: Int
  var rssKiB: Int
  var hwmKiB: Int

  static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

  static func read(pid: pid_t) -> ProcSample? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return nil }
    // Fields after the command name: state is field 3; utime 14, stime 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let ut = Int(fields[11]), let st = Int(fields[12]) else { return nil }
    var s = ProcSample(
      ticks: ut + st, runNanoseconds: 0, voluntarySwitches: 0, involuntarySwitches: 0, rssKiB: 0, hwmKiB: 0)
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    for t in tasks {
      if let ss = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/schedstat", encoding: .utf8),
        let first = ss.split(separator: " ").first, let ns = UInt64(first)
      {
        s.runNanoseconds += ns
      }
      if let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/status", encoding: .utf8) {
        s.voluntarySwitches += statusValue(status, "voluntary_ctxt_switches:") ?? 0
        s.involuntarySwitches += statusValue(status, "nonvoluntary_ctxt_switches:") ?? 0
      }
    }
    if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) {
      s.rssKiB = statusValue(status, "VmRSS:") ?? 0
      s.hwmKiB = statusValue(status, "VmHWM:") ?? 0
    }
    return s
  }

  private static func statusValue(_ status: String, _ key: String) -> Int? {
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return nil }
    return line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
  }
}
