// The desktop notification of a capture: `CaptureNotifier`'s notices, sent to the
// freedesktop notification server (org.freedesktop.Notifications.Notify) on the session
// bus through libdbus, from a thread of its own.

internal import CDBus
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Sends capture notices to the desktop's notification server. Everything it does runs on
/// its own serial queue (`captureshield-notify`): the X loop only hands a notice over and
/// never waits. Each D-Bus call has a timeout (`callTimeoutMs`); a bus that is missing,
/// hung or gone, or no notification server, is never fatal: notices are dropped and one
/// `notifications` record says so (again only when that changes). The next notice tries
/// again, so a notification server that starts after the daemon is used from then on.
final class DesktopNotifier: @unchecked Sendable {
  /// How long one D-Bus call may take.
  static let callTimeoutMs: Int32 = 3000
  /// Notices waiting on the queue at most (a hung bus makes each call wait its timeout).
  static let maxQueued = 4

  private let queue = DispatchQueue(label: "captureshield-notify")
  private let address: String?
  /// The daemon's log, shared with the loop (`AuditLog` is thread-safe: one lock).
  private let log: AuditLog
  private let queued = Locked(0)
  // Only on `queue`:
  private var connection: OpaquePointer?
  private var bodyMarkup = false
  private var lastID: UInt32 = 0
  /// What the last `notifications` record said (nil: nothing yet).
  private var reported: String?

  /// `environment` decides the bus (`busAddress`); `log` is the daemon's.
  init(environment: [String: String], log: AuditLog) {
    address = Self.busAddress(environment)
    self.log = log
  }

  /// The last reference goes after the queue's last work item (each holds one).
  deinit {
    if let c = connection {
      dbus_connection_close(c)
      dbus_connection_unref(c)
    }
  }

  /// The session bus's address: `DBUS_SESSION_BUS_ADDRESS`, else the systemd user bus
  /// `$XDG_RUNTIME_DIR/bus` when that socket exists; nil without either. Never X11
  /// autolaunch (which would start a bus): no bus means no notifications.
  static func busAddress(
    _ env: [String: String], isSocket: (String) -> Bool = DesktopNotifier.isSocket
  ) -> String? {
    if let a = env["DBUS_SESSION_BUS_ADDRESS"], !a.isEmpty { return a }
    if let dir = env["XDG_RUNTIME_DIR"], !dir.isEmpty, isSocket(dir + "/bus") { return "unix:path=\(dir)/bus" }
    return nil
  }

  static func isSocket(_ path: String) -> Bool {
    var st = stat()
    return stat(path, &st) == 0 && (UInt32(st.st_mode) & UInt32(S_IFMT)) == UInt32(S_IFSOCK)
  }

  /// At start: says whether notices can be shown (a server owns the name, or the bus can
  /// start one), in one `notifications` record.
  func probe() {
    enqueue { n in
      guard let c = n.connect() else { return }
      if n.call(c, "NameHasOwner") == true || n.call(c, "activatable") == true {
        n.report(on: true, why: "a notification server is on the session bus")
      } else {
        n.report(on: false, why: "no notification server on the session bus")
      }
    }
  }

  /// Shows `notice`, replacing the previous one (`replaces_id`).
  func send(_ notice: CaptureNotifier.Notice) {
    enqueue { $0.deliver(notice) }
  }

  private func enqueue(_ work: @escaping @Sendable (DesktopNotifier) -> Void) {
    let accepted = queued.withLock { n -> Bool in
      guard n < Self.maxQueued else { return false }
      n += 1
      return true
    }
    guard accepted else { return }  // the bus is slow: this notice is dropped (it was audited)
    queue.async { [self] in
      work(self)
      queued.withLock { $0 -= 1 }
    }
  }

  // MARK: On the queue

  private func report(on: Bool, why: String) {
    let key = "\(on) \(why)"
    guard reported != key else { return }
    reported = key
    log.write(AuditRecord("notifications", [("enabled", .bool(on)), ("why", .string(why))]))
  }

  /// The connection, opened and registered (Hello) when needed; nil (reported) if not.
  private func connect() -> OpaquePointer? {
    if let c = connection {
      if dbus_connection_get_is_connected(c) != 0 { return c }
      dbus_connection_close(c)
      dbus_connection_unref(c)
      connection = nil
    }
    guard let address else {
      report(on: false, why: "no session bus (DBUS_SESSION_BUS_ADDRESS not set, no $XDG_RUNTIME_DIR/bus)")
      return nil
    }
    var err = DBusError()
    dbus_error_init(&err)
    defer { dbus_error_free(&err) }
    // Private: libdbus's shared connection would be everyone's in this process.
    guard let c = dbus_connection_open_private(address, &err) else {
      report(on: false, why: "cannot connect to the session bus: \(Self.message(err))")
      return nil
    }
    dbus_connection_set_exit_on_disconnect(c, 0)
    // Hello, with our timeout (dbus_bus_register waits up to libdbus's default of 25 s).
    guard let hello = dbus_message_new_method_call(Self.busName, "/org/freedesktop/DBus", Self.busName, "Hello"),
      let reply = dbus_connection_send_with_reply_and_block(c, hello, Self.callTimeoutMs, &err)
    else {
      report(on: false, why: "the session bus did not answer: \(Self.message(err))")
      dbus_connection_close(c)
      dbus_connection_unref(c)
      return nil
    }
    dbus_message_unref(hello)
    if let name = Self.firstString(reply) { _ = dbus_bus_set_unique_name(c, name) }
    dbus_message_unref(reply)
    connection = c
    bodyMarkup = capabilities(c).contains("body-markup")
    return c
  }

  private static let busName = "org.freedesktop.DBus"
  private static let service = "org.freedesktop.Notifications"
  private static let path = "/org/freedesktop/Notifications"

  /// `NameHasOwner` or (`activatable`) whether the bus can start the notification server.
  private func call(_ c: OpaquePointer, _ what: String) -> Bool? {
    var err = DBusError()
    dbus_error_init(&err)
    defer { dbus_error_free(&err) }
    let method = what == "activatable" ? "ListActivatableNames" : what
    guard let m = dbus_message_new_method_call(Self.busName, "/org/freedesktop/DBus", Self.busName, method) else {
      return nil
    }
    defer { dbus_message_unref(m) }
    if what == "NameHasOwner" {
      var it = DBusMessageIter()
      dbus_message_iter_init_append(m, &it)
      Self.appendString(&it, Self.service)
    }
    guard let reply = dbus_connection_send_with_reply_and_block(c, m, Self.callTimeoutMs, &err) else { return nil }
    defer { dbus_message_unref(reply) }
    var it = DBusMessageIter()
    guard dbus_message_iter_init(reply, &it) != 0 else { return nil }
    if what == "NameHasOwner" {
      guard dbus_message_iter_get_arg_type(&it) == Self.typeBool else { return nil }
      var b: dbus_bool_t = 0
      dbus_message_iter_get_basic(&it, &b)
      return b != 0
    }
    return Self.strings(&it).contains(Self.service)
  }

  /// The server's `GetCapabilities` (empty when it does not answer).
  private func capabilities(_ c: OpaquePointer) -> [String] {
    guard let m = dbus_message_new_method_call(Self.service, Self.path, Self.service, "GetCapabilities") else {
      return []
    }
    defer { dbus_message_unref(m) }
    var err = DBusError()
    dbus_error_init(&err)
    defer { dbus_error_free(&err) }
    guard let reply = dbus_connection_send_with_reply_and_block(c, m, Self.callTimeoutMs, &err) else { return [] }
    defer { dbus_message_unref(reply) }
    var it = DBusMessageIter()
    guard dbus_message_iter_init(reply, &it) != 0 else { return [] }
    return Self.strings(&it)
  }

  private func deliver(_ notice: CaptureNotifier.Notice) {
    guard let c = connect() else { return }
    guard
      let m = dbus_message_new_method_call(Self.service, Self.path, Self.service, "Notify")
    else { return }
    defer { dbus_message_unref(m) }
    // Notify(app_name s, replaces_id u, app_icon s, summary s, body s, actions as,
    //        hints a{sv}, expire_timeout i)
    var it = DBusMessageIter()
    dbus_message_iter_init_append(m, &it)
    Self.appendString(&it, "CaptureShield")
    var replaces = lastID
    dbus_message_iter_append_basic(&it, Self.typeUInt32, &replaces)
    Self.appendString(&it, "security-high")
    Self.appendString(&it, notice.summary)
    Self.appendString(&it, bodyMarkup ? CaptureNotifier.escapeMarkup(notice.body) : notice.body)
    var actions = DBusMessageIter()
    dbus_message_iter_open_container(&it, Self.typeArray, "s", &actions)
    dbus_message_iter_close_container(&it, &actions)
    var hints = DBusMessageIter()
    dbus_message_iter_open_container(&it, Self.typeArray, "{sv}", &hints)
    var entry = DBusMessageIter()
    dbus_message_iter_open_container(&hints, Self.typeDictEntry, nil, &entry)
    Self.appendString(&entry, "urgency")
    var variant = DBusMessageIter()
    dbus_message_iter_open_container(&entry, Self.typeVariant, "y", &variant)
    var urgency: UInt8 = 1  // normal
    dbus_message_iter_append_basic(&variant, Self.typeByte, &urgency)
    dbus_message_iter_close_container(&entry, &variant)
    dbus_message_iter_close_container(&hints, &entry)
    dbus_message_iter_close_container(&it, &hints)
    var expire: Int32 = -1
    dbus_message_iter_append_basic(&it, Self.typeInt32, &expire)

    var err = DBusError()
    dbus_error_init(&err)
    defer { dbus_error_free(&err) }
    guard let reply = dbus_connection_send_with_reply_and_block(c, m, Self.callTimeoutMs, &err) else {
      let name = err.name.map { String(cString: $0) } ?? ""
      if name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
        report(on: false, why: "no notification server on the session bus")
      } else {
        report(on: false, why: "the notification server did not take the notice: \(Self.message(err))")
      }
      return
    }
    defer { dbus_message_unref(reply) }
    var r = DBusMessageIter()
    if dbus_message_iter_init(reply, &r) != 0, dbus_message_iter_get_arg_type(&r) == Self.typeUInt32 {
      var id: UInt32 = 0
      dbus_message_iter_get_basic(&r, &id)
      lastID = id
    }
    report(on: true, why: "a notification server is on the session bus")
  }

  // MARK: libdbus helpers

  // D-Bus type codes (the DBUS_TYPE_* macros are casts Swift does not import).
  private static let typeString = Int32(UInt8(ascii: "s"))
  private static let typeUInt32 = Int32(UInt8(ascii: "u"))
  private static let typeInt32 = Int32(UInt8(ascii: "i"))
  private static let typeByte = Int32(UInt8(ascii: "y"))
  private static let typeBool = Int32(UInt8(ascii: "b"))
  private static let typeArray = Int32(UInt8(ascii: "a"))
  private static let typeVariant = Int32(UInt8(ascii: "v"))
  private static let typeDictEntry = Int32(UInt8(ascii: "e"))

  private static func appendString(_ it: inout DBusMessageIter, _ s: String) {
    // libdbus rejects (aborts on) strings that are not UTF-8 or hold NUL: Swift strings are
    // UTF-8; NULs are dropped.
    let clean = s.replacingOccurrences(of: "\0", with: "")
    clean.withCString { p in
      var ptr: UnsafePointer<CChar>? = p
      _ = dbus_message_iter_append_basic(&it, typeString, &ptr)
    }
  }

  private static func firstString(_ m: OpaquePointer) -> String? {
    var it = DBusMessageIter()
    guard dbus_message_iter_init(m, &it) != 0, dbus_message_iter_get_arg_type(&it) == typeString else { return nil }
    var p: UnsafePointer<CChar>? = nil
    dbus_message_iter_get_basic(&it, &p)
    return p.map { String(cString: $0) }
  }

  /// The strings of the array `it` points at.
  private static func strings(_ it: inout DBusMessageIter) -> [String] {
    guard dbus_message_iter_get_arg_type(&it) == typeArray else { return [] }
    var sub = DBusMessageIter()
    dbus_message_iter_recurse(&it, &sub)
    var out: [String] = []
    while dbus_message_iter_get_arg_type(&sub) == typeString {
      var p: UnsafePointer<CChar>? = nil
      dbus_message_iter_get_basic(&sub, &p)
      if let p { out.append(String(cString: p)) }
      guard dbus_message_iter_next(&sub) != 0 else { break }
    }
    return out
  }

  private static func message(_ err: DBusError) -> String {
    err.message.map { String(cString: $0) } ?? "no answer"
  }
}
