// Small libdbus helpers for the accessibility bus (`AccessibilityWatch`): a private
// connection, a blocking call with a timeout, and the few argument types AT-SPI uses.

internal import CDBus
import Foundation

enum DBusLink {
  /// A reply, unreferenced when it goes.
  final class Reply {
    let message: OpaquePointer
    init(_ m: OpaquePointer) { message = m }
    deinit { dbus_message_unref(message) }
  }

  static let typeString = Int32(UInt8(ascii: "s"))
  static let typeObjectPath = Int32(UInt8(ascii: "o"))
  static let typeUInt32 = Int32(UInt8(ascii: "u"))
  static let typeInt32 = Int32(UInt8(ascii: "i"))
  static let typeBool = Int32(UInt8(ascii: "b"))
  static let typeArray = Int32(UInt8(ascii: "a"))
  static let typeVariant = Int32(UInt8(ascii: "v"))
  static let typeStruct = Int32(UInt8(ascii: "r"))

  /// A private connection to `address`, registered (Hello, with our timeout); nil if not.
  static func open(_ address: String, timeoutMs: Int32) -> OpaquePointer? {
    var err = DBusError()
    dbus_error_init(&err)
    defer { dbus_error_free(&err) }
    guard let c = dbus_connection_open_private(address, &err) else { return nil }
    dbus_connection_set_exit_on_disconnect(c, 0)
    guard
      let reply = call(
        c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello",
        timeoutMs: timeoutMs),
      let name = firstString(reply.message)
    else {
      dbus_connection_close(c)
      dbus_connection_unref(c)
      return nil
    }
    _ = dbus_bus_set_unique_name(c, name)
    return c
  }

  /// A method call and its reply (nil: an error, or no answer within `timeoutMs`).
  static func call(
    _ c: OpaquePointer, _ dest: String, _ path: String, _ iface: String, _ method: String, timeoutMs: Int32,
    _ args: (inout DBusMessageIter) -> Void = { _ in }
  ) -> Reply? {
    guard dbus_validate_path(path, nil) != 0, dbus_validate_bus_name(dest, nil) != 0,
      let m = dbus_message_new_method_call(dest, path, iface, method)
    else { return nil }
    defer { dbus_message_unref(m) }
    var it = DBusMessageIter()
    dbus_message_iter_init_append(m, &it)
    args(&it)
    var err = DBusError()
    dbus_error_init(&err)
    defer { dbus_error_free(&err) }
    guard let r = dbus_connection_send_with_reply_and_block(c, m, timeoutMs, &err) else { return nil }
    return Reply(r)
  }

  static func appendString(_ it: inout DBusMessageIter, _ s: String) {
    let clean = s.replacingOccurrences(of: "\0", with: "")
    clean.withCString { p in
      var ptr: UnsafePointer<CChar>? = p
      _ = dbus_message_iter_append_basic(&it, typeString, &ptr)
    }
  }

  static func appendVariantBool(_ it: inout DBusMessageIter, _ b: Bool) {
    var v = DBusMessageIter()
    dbus_message_iter_open_container(&it, typeVariant, "b", &v)
    var value: dbus_bool_t = b ? 1 : 0
    dbus_message_iter_append_basic(&v, typeBool, &value)
    dbus_message_iter_close_container(&it, &v)
  }

  static func appendEmptyStringArray(_ it: inout DBusMessageIter) {
    var a = DBusMessageIter()
    dbus_message_iter_open_container(&it, typeArray, "s", &a)
    dbus_message_iter_close_container(&it, &a)
  }

  static func firstString(_ m: OpaquePointer) -> String? {
    var it = DBusMessageIter()
    guard dbus_message_iter_init(m, &it) != 0 else { return nil }
    return string(&it)
  }

  static func firstUInt32(_ m: OpaquePointer) -> UInt32? {
    var it = DBusMessageIter()
    guard dbus_message_iter_init(m, &it) != 0, dbus_message_iter_get_arg_type(&it) == typeUInt32 else { return nil }
    var v: UInt32 = 0
    dbus_message_iter_get_basic(&it, &v)
    return v
  }

  /// The first argument as `au`.
  static func firstUInt32s(_ m: OpaquePointer) -> [UInt32]? {
    var it = DBusMessageIter()
    guard dbus_message_iter_init(m, &it) != 0, dbus_message_iter_get_arg_type(&it) == typeArray else { return nil }
    var sub = DBusMessageIter()
    dbus_message_iter_recurse(&it, &sub)
    var out: [UInt32] = []
    while dbus_message_iter_get_arg_type(&sub) == typeUInt32 {
      var v: UInt32 = 0
      dbus_message_iter_get_basic(&sub, &v)
      out.append(v)
      guard dbus_message_iter_next(&sub) != 0 else { break }
    }
    return out
  }

  /// The first argument as a struct of `i`s (`(iiii)`).
  static func firstInt32Struct(_ m: OpaquePointer) -> [Int32]? {
    var it = DBusMessageIter()
    guard dbus_message_iter_init(m, &it) != 0, dbus_message_iter_get_arg_type(&it) == typeStruct else { return nil }
    var sub = DBusMessageIter()
    dbus_message_iter_recurse(&it, &sub)
    var out: [Int32] = []
    while dbus_message_iter_get_arg_type(&sub) == typeInt32 {
      var v: Int32 = 0
      dbus_message_iter_get_basic(&sub, &v)
      out.append(v)
      guard dbus_message_iter_next(&sub) != 0 else { break }
    }
    return out
  }

  /// The first argument as `a(so)`: AT-SPI object references (bus name, path).
  static func objectRefs(_ m: OpaquePointer) -> [(name: String, path: String)] {
    var it = DBusMessageIter()
    guard dbus_message_iter_init(m, &it) != 0, dbus_message_iter_get_arg_type(&it) == typeArray else { return [] }
    var arr = DBusMessageIter()
    dbus_message_iter_recurse(&it, &arr)
    var out: [(name: String, path: String)] = []
    while dbus_message_iter_get_arg_type(&arr) == typeStruct {
      var s = DBusMessageIter()
      dbus_message_iter_recurse(&arr, &s)
      if let name = string(&s), dbus_message_iter_next(&s) != 0, let path = string(&s) { out.append((name, path)) }
      guard dbus_message_iter_next(&arr) != 0 else { break }
    }
    return out
  }

  /// The string or object path `it` points at.
  private static func string(_ it: inout DBusMessageIter) -> String? {
    let t = dbus_message_iter_get_arg_type(&it)
    guard t == typeString || t == typeObjectPath else { return nil }
    var p: UnsafePointer<CChar>? = nil
    dbus_message_iter_get_basic(&it, &p)
    return p.map { String(cString: $0) }
  }
}
