// A small, non-throwing xcb client for the benchmark's tight loops: raw connection access,
// cached atoms, plain app windows. (Tests use the throwing `TestXConnection`.)

import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A small xcb client.
public final class XClient {
  public let conn: OpaquePointer
  public let root: xcb_window_t
  public let rootVisual: xcb_visualid_t
  public let resourceMask: UInt32
  public let display: String
  private var atomCache: [String: xcb_atom_t] = [:]

  public init(display: String) throws {
    var screen: Int32 = 0
    guard let c = xcb_connect(display, &screen) else {
      throw XConnectionError.connectFailed(display: display, code: -1)
    }
    let code = xcb_connection_has_error(c)
    guard code == 0 else {
      xcb_disconnect(c)
      throw XConnectionError.connectFailed(display: display, code: code)
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

  public var hasError: Bool { xcb_connection_has_error(conn) != 0 }
  public func id() -> UInt32 { xcb_generate_id(conn) }
  public func flush() { _ = xcb_flush(conn) }
  public func base(of xid: UInt32) -> UInt32 { xid & ~resourceMask }

  /// One round trip (GetInputFocus): everything sent before it has been executed.
  public func sync() {
    if let r = xcb_get_input_focus_reply(conn, xcb_get_input_focus(conn), nil) { free(r) }
  }

  /// Drops queued events and errors (this client never waits on them).
  public func discardEvents() {
    while let ev = xcb_poll_for_event(conn) { free(ev) }
  }

  public func atom(_ name: String) -> xcb_atom_t {
    if let a = atomCache[name] { return a }
    let ck = name.withCString { xcb_intern_atom(conn, 0, UInt16(strlen($0)), $0) }
    guard let r = xcb_intern_atom_reply(conn, ck, nil) else { return 0 }
    defer { free(r) }
    atomCache[name] = r.pointee.atom
    return r.pointee.atom
  }

  public func extensionOpcode(_ name: String) -> UInt8? {
    let ck = name.withCString { xcb_query_extension(conn, UInt16(strlen($0)), $0) }
    guard let r = xcb_query_extension_reply(conn, ck, nil) else { return nil }
    defer { free(r) }
    return r.pointee.present != 0 ? r.pointee.major_opcode : nil
  }

  /// A property's bytes; nil when the window or the property does not exist.
  public func property(_ window: xcb_window_t, _ atom: xcb_atom_t, maxBytes: UInt32 = 1 << 24) -> [UInt8]? {
    let ck = xcb_get_property(conn, 0, window, atom, 0, 0, (maxBytes + 3) / 4)
    guard let r = xcb_get_property_reply(conn, ck, nil) else { return nil }
    defer { free(r) }
    guard r.pointee.type != 0 else { return nil }
    let len = Int(xcb_get_property_value_length(r))
    guard len > 0, let p = xcb_get_property_value(r) else { return [] }
    return Array(UnsafeRawBufferPointer(start: p, count: len))
  }

  /// 32-bit values of a property.
  public func cardinals(_ window: xcb_window_t, _ atom: xcb_atom_t) -> [UInt32] {
    guard let b = property(window, atom) else { return [] }
    return stride(from: 0, to: b.count - 3, by: 4).map {
      UInt32(b[$0]) | UInt32(b[$0 + 1]) << 8 | UInt32(b[$0 + 2]) << 16 | UInt32(b[$0 + 3]) << 24
    }
  }

  /// The map state (0 unmapped, 1 unviewable, 2 viewable); nil when the window is gone.
  public func mapState(_ window: xcb_window_t) -> UInt8? {
    guard let r = xcb_get_window_attributes_reply(conn, xcb_get_window_attributes(conn, window), nil) else {
      return nil
    }
    defer { free(r) }
    return r.pointee.map_state
  }

  public func setTitle(_ window: xcb_window_t, _ title: String) {
    let b = Array(title.utf8)
    xcb_change_property(conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, 39, 31, 8, UInt32(b.count), b)
  }

  public func setSecureTag(_ window: xcb_window_t) {
    var one: UInt32 = 1
    xcb_change_property(
      conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, atom("_CAPTURE_SHIELD_SECURE"), 6, 32, 1, &one)
  }

  /// A top-level app window: solid colour, WM_CLASS, WM_NAME, optionally tagged secure, mapped.
  @discardableResult
  public func appWindow(
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
