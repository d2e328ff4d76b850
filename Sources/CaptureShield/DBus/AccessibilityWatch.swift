// Password fields anywhere: the session's accessibility bus (AT-SPI) followed on a thread of
// its own, through libdbus. It finds every showing password text field of every accessible
// application and hands them to the loop as plain values (`AccessibleField`); the engine
// decides (`PasswordViews`, `Engine.passwordFieldsShown`).

internal import CDBus
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Follows the accessibility bus: turns accessibility on for the applications that wait
/// for an assistive client (`org.a11y.Status.IsEnabled` = true, as a screen reader does),
/// registers for the events that show, hide, focus and move fields (object:state-changed,
/// object:bounds-changed, window:), and after each burst of events (and every
/// `rescanInterval` as well: windows move without an event) walks every application's tree
/// for objects of role "password text" with state showing: their extents in screen
/// coordinates, whether they have the focus, and the application's PID (from the bus
/// daemon). A new list (only when it changed) is left for the loop, which polls
/// `fileDescriptor` and calls `take`.
///
/// Everything on the bus happens on its own thread (`captureshield-a11y`); a bus that is
/// missing, slow or gone is never fatal: the thread tries again every `retryInterval` and
/// one `accessibility` record says what it sees (again only when that changes).
final class AccessibilityWatch: @unchecked Sendable {
  /// How long one D-Bus call may take.
  static let callTimeoutMs: Int32 = 1000
  /// A rescan this long after the last event of a burst.
  static let settleMs = 50
  /// A rescan at least this often (windows move, trees change without an event we get).
  static let rescanInterval = 1.0
  /// Time between two attempts to reach the bus.
  static let retryInterval = 2.0
  /// Objects looked at per application and scan, at most (a huge tree is cut short).
  static let maxObjectsPerApp = 4_000

  /// The loop polls this (readable: a new list is waiting).
  let fileDescriptor: Int32
  private let wakeWrite: Int32
  private let sessionAddress: String?
  private let log: AuditLog
  private let latest = Locked<[AccessibleField]?>(nil)
  private let stopping = Locked(false)
  // Only on the thread:
  private var session: OpaquePointer?
  private var bus: OpaquePointer?
  private var reported: String?
  private var lastFields: [AccessibleField]?
  private var pids: [String: Int] = [:]

  /// nil when no pipe could be made.
  init?(environment: [String: String], log: AuditLog) {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return nil }
    for fd in fds {
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    fileDescriptor = fds[0]
    wakeWrite = fds[1]
    sessionAddress = DesktopNotifier.busAddress(environment)
    self.log = log
  }

  deinit {
    close(fileDescriptor)
    close(wakeWrite)
  }

  func start() {
    let t = Thread { [self] in run() }
    t.name = "captureshield-a11y"
    t.start()
  }

  /// Asks the thread to end (it does within `callTimeoutMs` or a scan).
  func stop() { stopping.withLock { $0 = true } }

  /// The fields found since the last call, if the list changed (main thread).
  func take() -> [AccessibleField]? {
    var buf = [UInt8](repeating: 0, count: 64)
    while read(fileDescriptor, &buf, buf.count) > 0 {}
    return latest.withLock { v in
      defer { v = nil }
      return v
    }
  }

  // MARK: On the thread

  private var stopped: Bool { stopping.withLock { $0 } }

  private func run() {
    while !stopped {
      if bus == nil || dbus_connection_get_is_connected(bus) == 0 {
        disconnect()
        guard connect() else {
          Thread.sleep(forTimeInterval: Self.retryInterval)
          continue
        }
      }
      publish(scan())
      follow()
    }
    disconnect()
  }

  /// Reads events until a rescan is due: `settleMs` after a burst, or `rescanInterval`.
  private func follow() {
    guard let bus else { return }
    let until = Date().addingTimeInterval(Self.rescanInterval)
    var dirtySince: Date?
    while !stopped, dbus_connection_get_is_connected(bus) != 0 {
      let now = Date()
      if now >= until { return }
      if let d = dirtySince, now.timeIntervalSince(d) * 1000 >= Double(Self.settleMs) { return }
      _ = dbus_connection_read_write(bus, Int32(Self.settleMs))
      while let m = dbus_connection_pop_message(bus) {
        if dbus_message_get_type(m) == DBUS_MESSAGE_TYPE_SIGNAL, dirtySince == nil { dirtySince = Date() }
        dbus_message_unref(m)
      }
    }
  }

  /// A new list, and a list with fields every scan (their windows may have moved or
  /// appeared since: the loop maps them again).
  private func publish(_ fields: [AccessibleField]) {
    guard fields != lastFields || !fields.isEmpty else { return }
    lastFields = fields
    latest.withLock { $0 = fields }
    var b: UInt8 = 1
    _ = write(wakeWrite, &b, 1)
  }

  private func report(on: Bool, why: String) {
    let key = "\(on) \(why)"
    guard reported != key else { return }
    reported = key
    log.write(AuditRecord("accessibility", [("enabled", .bool(on)), ("why", .string(why))]))
  }

  /// The session bus, the accessibility bus's address, accessibility turned on, the
  /// accessibility bus and its event registrations.
  private func connect() -> Bool {
    guard let sessionAddress else {
      report(on: false, why: "no session bus (DBUS_SESSION_BUS_ADDRESS not set, no $XDG_RUNTIME_DIR/bus)")
      return false
    }
    guard let s = DBusLink.open(sessionAddress, timeoutMs: Self.callTimeoutMs) else {
      report(on: false, why: "cannot connect to the session bus")
      return false
    }
    session = s
    guard
      let reply = DBusLink.call(
        s, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress", timeoutMs: Self.callTimeoutMs),
      let address = DBusLink.firstString(reply.message)
    else {
      report(on: false, why: "no accessibility bus (org.a11y.Bus: at-spi-bus-launcher not running)")
      return false
    }
    // Applications that wait for an assistive client (Qt, Chromium, Firefox) turn their
    // accessibility on when this is true, as for a screen reader.
    _ = DBusLink.call(
      s, "org.a11y.Bus", "/org/a11y/bus", "org.freedesktop.DBus.Properties", "Set", timeoutMs: Self.callTimeoutMs
    ) { it in
      DBusLink.appendString(&it, "org.a11y.Status")
      DBusLink.appendString(&it, "IsEnabled")
      DBusLink.appendVariantBool(&it, true)
    }
    guard let b = DBusLink.open(address, timeoutMs: Self.callTimeoutMs) else {
      report(on: false, why: "cannot connect to the accessibility bus at \(address)")
      return false
    }
    bus = b
    for iface in ["org.a11y.atspi.Event.Object", "org.a11y.atspi.Event.Window", "org.a11y.atspi.Event.Focus"] {
      dbus_bus_add_match(b, "type='signal',interface='\(iface)'", nil)
    }
    // Applications send only the events someone registered for.
    for event in ["object:state-changed", "object:bounds-changed", "object:children-changed", "window:", "focus:"] {
      let ok = DBusLink.call(
        b, "org.a11y.atspi.Registry", "/org/a11y/atspi/registry", "org.a11y.atspi.Registry", "RegisterEvent",
        timeoutMs: Self.callTimeoutMs
      ) { it in
        DBusLink.appendString(&it, event)
        DBusLink.appendEmptyStringArray(&it)
        DBusLink.appendString(&it, "")
      }
      if ok == nil {  // at-spi2-core before 2.40: RegisterEvent(s)
        _ = DBusLink.call(
          b, "org.a11y.atspi.Registry", "/org/a11y/atspi/registry", "org.a11y.atspi.Registry", "RegisterEvent",
          timeoutMs: Self.callTimeoutMs
        ) { DBusLink.appendString(&$0, event) }
      }
    }
    report(on: true, why: "following the accessibility bus at \(address)")
    return true
  }

  private func disconnect() {
    for c in [bus, session].compactMap({ $0 }) {
      dbus_connection_close(c)
      dbus_connection_unref(c)
    }
    bus = nil
    session = nil
    pids = [:]
  }

  // MARK: Scanning

  /// AT-SPI's role "password text" and the states looked at.
  static let rolePasswordText: UInt32 = 40
  static let stateFocused = 12
  static let stateShowing = 25

  /// Every showing password field of every application on the bus.
  private func scan() -> [AccessibleField] {
    guard let bus else { return [] }
    let apps = children(bus, "org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
    var out: [AccessibleField] = []
    var seen: Set<String> = []
    log.debug("accessibility: \(apps.count) applications on the bus")
    for app in apps where !stopped {
      seen.insert(app.name)
      guard let pid = pid(of: app.name) else { continue }
      var stack = [app.path]
      var visited = 0
      while let path = stack.popLast(), visited < Self.maxObjectsPerApp, !stopped {
        visited += 1
        let role = DBusLink.call(
          bus, app.name, path, "org.a11y.atspi.Accessible", "GetRole", timeoutMs: Self.callTimeoutMs
        ).flatMap { DBusLink.firstUInt32($0.message) }
        guard let role else { continue }  // gone, or the app does not answer
        if role == Self.rolePasswordText {
          if let f = field(bus, app.name, path, pid: pid) { out.append(f) }
          continue
        }
        stack += children(bus, app.name, path).filter { $0.name == app.name }.map(\.path).reversed()
      }
    }
    pids = pids.filter { seen.contains($0.key) }
    log.debug("accessibility: password fields \(out.map { "pid \($0.pid) \($0.area)" })")
    return out.sorted { ($0.pid, $0.area.y, $0.area.x) < ($1.pid, $1.area.y, $1.area.x) }
  }

  private func pid(of name: String) -> Int? {
    if let p = pids[name] { return p }
    guard let bus,
      let r = DBusLink.call(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
        timeoutMs: Self.callTimeoutMs, { DBusLink.appendString(&$0, name) }),
      let pid = DBusLink.firstUInt32(r.message)
    else { return nil }
    pids[name] = Int(pid)
    return Int(pid)
  }

  private func field(_ bus: OpaquePointer, _ name: String, _ path: String, pid: Int) -> AccessibleField? {
    guard
      let s = DBusLink.call(bus, name, path, "org.a11y.atspi.Accessible", "GetState", timeoutMs: Self.callTimeoutMs),
      let states = DBusLink.firstUInt32s(s.message)
    else { return nil }
    func has(_ bit: Int) -> Bool { states.count > bit / 32 && states[bit / 32] & (1 << UInt32(bit % 32)) != 0 }
    guard has(Self.stateShowing) else { return nil }
    guard
      let e = DBusLink.call(
        bus, name, path, "org.a11y.atspi.Component", "GetExtents", timeoutMs: Self.callTimeoutMs,
        { it in
          var screen: UInt32 = 0  // ATSPI_COORD_TYPE_SCREEN
          dbus_message_iter_append_basic(&it, DBusLink.typeUInt32, &screen)
        }),
      let r = DBusLink.firstInt32Struct(e.message), r.count == 4
    else { return nil }
    return AccessibleField(
      pid: pid, area: ScreenRect(x: Int(r[0]), y: Int(r[1]), width: Int(r[2]), height: Int(r[3])),
      focused: has(Self.stateFocused))
  }

  private func children(_ bus: OpaquePointer, _ name: String, _ path: String) -> [(name: String, path: String)] {
    guard
      let r = DBusLink.call(bus, name, path, "org.a11y.atspi.Accessible", "GetChildren", timeoutMs: Self.callTimeoutMs)
    else { return [] }
    return DBusLink.objectRefs(r.message)
  }
}
