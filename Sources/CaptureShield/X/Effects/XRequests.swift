// Every state-changing request the daemon sends to X, as small wrappers: the one place
// to audit what CaptureShield does to the display (see docs/architecture.md, "X writers").

internal import CXCB
import Foundation

/// The state-changing X requests the daemon sends: windows (create, map, unmap, destroy,
/// configure, attributes and event masks), properties, selections, events sent to other
/// clients, SHAPE and XFIXES selections, and its own connection's close-down mode.
///
/// Nothing in `Sources/CaptureShield` calls these `xcb_*` functions anywhere else (the
/// single-writer test, `SingleWriterTests`, fails if one does), with two documented
/// exceptions: the RECORD thread's early `MapWindow` (`RecordPump.fire`) and the CLI's
/// one-shot commands (`XControl`, `TestWindowApp`). Queries (GetProperty, QueryTree,
/// GetGeometry, ...) are in `XConnection`.
protocol XRequests: AnyObject {
  /// Creates a window; with `checked`, waits for the server's answer and returns false when
  /// it refused (the parent is gone: an expected race).
  @discardableResult
  func createWindow(
    _ window: UInt32, parent: UInt32, x: Int16, y: Int16, width: UInt16, height: UInt16, inputOnly: Bool,
    mask: UInt32, values: [UInt32], checked: Bool
  ) -> Bool
  func mapWindow(_ window: UInt32)
  /// Returns the low 16 bits of the request's sequence number (events carry them).
  @discardableResult func unmapWindow(_ window: UInt32) -> UInt16
  func destroyWindow(_ window: UInt32)
  /// Stacks `window` above its siblings. Returns the request's sequence number (low 16
  /// bits), which the ConfigureNotify it causes carries. X sends none when nothing changes;
  /// a NoOperation follows, so that another client's ConfigureWindow of the same window
  /// executed next does not carry that same number (see `ShieldTable.ownConfigures`).
  @discardableResult func raiseWindow(_ window: UInt32) -> UInt16
  /// ConfigureWindow: puts `window` at (x, y) with this size, no border, above its
  /// siblings. Returns the request's sequence number (low 16 bits); a NoOperation follows,
  /// as after `raiseWindow`.
  @discardableResult
  func placeWindow(_ window: UInt32, x: Int16, y: Int16, width: UInt16, height: UInt16) -> UInt16
  /// ChangeWindowAttributes with a value mask (event masks, backgrounds).
  func changeAttributes(_ window: UInt32, mask: UInt32, values: [UInt32])
  /// Clears the window to its background and makes the server send Expose.
  func clearArea(_ window: UInt32)
  func changeProperty(_ window: UInt32, _ property: UInt32, type: UInt32, format: UInt8, bytes: [UInt8])
  /// An 8-bit property straight from memory we own (a secret is never copied into an
  /// array that outlives its wipe).
  func changeProperty(_ window: UInt32, _ property: UInt32, type: UInt32, from bytes: UnsafeRawPointer, count: Int)
  func deleteProperty(_ window: UInt32, _ property: UInt32)
  func setSelectionOwner(_ owner: UInt32, selection: UInt32, time: UInt32)
  func convertSelection(requestor: UInt32, selection: UInt32, target: UInt32, property: UInt32, time: UInt32)
  /// SendEvent of a 32-byte event to `destination` with an empty event mask.
  func sendEvent(to destination: UInt32, _ event: [UInt8])
  /// An empty input shape: pointer events fall through the window.
  func shapeInputEmpty(_ window: UInt32)
  /// Resets the window's shape of `kind` (0 bounding, 1 clip) to the default (ShapeMask
  /// with no pixmap).
  func shapeReset(_ window: UInt32, kind: UInt8)
  /// The window's bounding shape set to `rects` (secure views: the shield covers only them).
  func shapeBounding(_ window: UInt32, rects: [ViewRect])
  /// SHAPE SelectInput: ShapeNotify of `window` to this connection.
  func shapeSelectInput(_ window: UInt32)
  /// XFIXES SelectSelectionInput (owner changes of `selection`, reported to `window`).
  func selectSelectionInput(_ window: UInt32, selection: UInt32, mask: UInt32)
  /// Whether this connection's resources outlive it (RetainPermanent) or not.
  func setCloseDownMode(retainPermanent: Bool)
  /// Server-side drawing resources of our own windows (the shield's tile and label).
  func createPixmap(_ pixmap: UInt32, depth: UInt8, drawable: UInt32, width: UInt16, height: UInt16)
  func createGC(_ gc: UInt32, drawable: UInt32, mask: UInt32, values: [UInt32])
  func changeGC(_ gc: UInt32, mask: UInt32, values: [UInt32])
  func freeGC(_ gc: UInt32)
  func fillRectangles(_ drawable: UInt32, gc: UInt32, _ rects: [(x: Int16, y: Int16, width: UInt16, height: UInt16)])
  func drawText(_ drawable: UInt32, gc: UInt32, x: Int16, y: Int16, _ bytes: [UInt8])
  /// A state-changing request of the CaptureShield Xorg module's extension (Grant, Revoke,
  /// SelectInput, SetProtection: xorg/PROTOCOL.md), with its one CARD32 argument.
  func moduleRequest(major: UInt8, minor: UInt8, _ argument: UInt32)
  /// Opens a core font; false when the server has none of that name.
  func openFont(_ font: UInt32, name: String) -> Bool
  func flush()
}

extension XRequests {
  /// CARDINAL/32 values.
  func changeProperty(_ window: UInt32, _ property: UInt32, cardinals: [UInt32]) {
    changeProperty(window, property, type: PredefinedAtom.cardinal, format: 32, bytes: cardinals.littleEndianBytes)
  }

  /// ATOM/32 or other 32-bit values of `type`.
  func changeProperty(_ window: UInt32, _ property: UInt32, type: UInt32, words: [UInt32]) {
    changeProperty(window, property, type: type, format: 32, bytes: words.littleEndianBytes)
  }

  /// Sets the event mask of `window`.
  func selectEvents(_ window: UInt32, _ mask: UInt32) {
    changeAttributes(window, mask: XCB_CW_EVENT_MASK.rawValue, values: [mask])
  }

  /// A ClientMessage of `type` with five 32-bit words, sent to `window` itself.
  func sendClientMessage(to window: UInt32, type: UInt32, words: [UInt32]) {
    var ev = xcb_client_message_event_t()
    ev.response_type = UInt8(XCB_CLIENT_MESSAGE)
    ev.format = 32
    ev.window = window
    ev.type = type
    ev.data = xcb_client_message_data_t(words: words)
    sendEvent(to: window, XEventBytes.of(&ev))
  }
}

/// The raw 32 bytes of an event struct, as SendEvent wants them.
enum XEventBytes {
  static func of<T>(_ event: inout T) -> [UInt8] {
    withUnsafeBytes(of: &event) { raw in
      var buf = [UInt8](repeating: 0, count: 32)
      for i in 0..<min(32, raw.count) { buf[i] = raw[i] }
      return buf
    }
  }
}

extension Array where Element == UInt32 {
  /// The values as the server's byte order expects them from this (little-endian) client.
  var littleEndianBytes: [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(count * 4)
    for v in self { Swift.withUnsafeBytes(of: v.littleEndian) { out += $0 } }
    return out
  }
}

extension XConnection: XRequests {
  @discardableResult
  func createWindow(
    _ window: UInt32, parent: UInt32, x: Int16, y: Int16, width: UInt16, height: UInt16, inputOnly: Bool,
    mask: UInt32, values: [UInt32], checked: Bool
  ) -> Bool {
    let cls = UInt16((inputOnly ? XCB_WINDOW_CLASS_INPUT_ONLY : XCB_WINDOW_CLASS_INPUT_OUTPUT).rawValue)
    guard checked else {
      xcb_create_window(conn, 0, window, parent, x, y, width, height, 0, cls, 0, mask, values)
      return true
    }
    let ck = xcb_create_window_checked(conn, 0, window, parent, x, y, width, height, 0, cls, 0, mask, values)
    if let err = xcb_request_check(conn, ck) {
      errors.report(err.pointee, connection: displayName)
      free(err)
      return false
    }
    return true
  }

  func mapWindow(_ window: UInt32) { xcb_map_window(conn, window) }

  @discardableResult
  func unmapWindow(_ window: UInt32) -> UInt16 {
    UInt16(truncatingIfNeeded: xcb_unmap_window(conn, window).sequence)
  }

  func destroyWindow(_ window: UInt32) { xcb_destroy_window(conn, window) }

  @discardableResult
  func raiseWindow(_ window: UInt32) -> UInt16 {
    var v: [UInt32] = [UInt32(XCB_STACK_MODE_ABOVE.rawValue)]
    let cookie = xcb_configure_window(conn, window, UInt16(XCB_CONFIG_WINDOW_STACK_MODE.rawValue), &v)
    xcb_no_operation(conn)
    return UInt16(truncatingIfNeeded: cookie.sequence)
  }

  @discardableResult
  func placeWindow(_ window: UInt32, x: Int16, y: Int16, width: UInt16, height: UInt16) -> UInt16 {
    let mask =
      XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue | XCB_CONFIG_WINDOW_WIDTH.rawValue
      | XCB_CONFIG_WINDOW_HEIGHT.rawValue | XCB_CONFIG_WINDOW_BORDER_WIDTH.rawValue
      | XCB_CONFIG_WINDOW_STACK_MODE.rawValue
    var v: [UInt32] = [
      UInt32(bitPattern: Int32(x)), UInt32(bitPattern: Int32(y)), UInt32(width), UInt32(height), 0,
      UInt32(XCB_STACK_MODE_ABOVE.rawValue),
    ]
    let cookie = xcb_configure_window(conn, window, UInt16(mask), &v)
    xcb_no_operation(conn)
    return UInt16(truncatingIfNeeded: cookie.sequence)
  }

  func changeAttributes(_ window: UInt32, mask: UInt32, values: [UInt32]) {
    xcb_change_window_attributes(conn, window, mask, values)
  }

  func clearArea(_ window: UInt32) { xcb_clear_area(conn, 1, window, 0, 0, 0, 0) }

  func changeProperty(_ window: UInt32, _ property: UInt32, type: UInt32, format: UInt8, bytes: [UInt8]) {
    let units = UInt32(bytes.count / max(1, Int(format) / 8))
    xcb_change_property(conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, property, type, format, units, bytes)
  }

  func changeProperty(_ window: UInt32, _ property: UInt32, type: UInt32, from bytes: UnsafeRawPointer, count: Int) {
    xcb_change_property(
      conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, property, type, 8, UInt32(count), bytes)
  }

  func deleteProperty(_ window: UInt32, _ property: UInt32) { xcb_delete_property(conn, window, property) }

  func setSelectionOwner(_ owner: UInt32, selection: UInt32, time: UInt32) {
    xcb_set_selection_owner(conn, owner, selection, time)
  }

  func convertSelection(requestor: UInt32, selection: UInt32, target: UInt32, property: UInt32, time: UInt32) {
    xcb_convert_selection(conn, requestor, selection, target, property, time)
  }

  func sendEvent(to destination: UInt32, _ event: [UInt8]) {
    let buf = event.map { CChar(bitPattern: $0) }
    xcb_send_event(conn, 0, destination, 0, buf)
  }

  func shapeInputEmpty(_ window: UInt32) {
    xcb_shape_rectangles(
      conn, UInt8(XCB_SHAPE_SO_SET.rawValue), UInt8(XCB_SHAPE_SK_INPUT.rawValue), 0, window, 0, 0, 0, nil)
  }

  func shapeReset(_ window: UInt32, kind: UInt8) {
    xcb_shape_mask(conn, UInt8(XCB_SHAPE_SO_SET.rawValue), kind, window, 0, 0, 0)
  }

  func shapeBounding(_ window: UInt32, rects: [ViewRect]) {
    func c16(_ v: Int64) -> Int16 { Int16(clamping: v) }
    let r = rects.map { v in
      xcb_rectangle_t(
        x: c16(Int64(v.x)), y: c16(Int64(v.y)), width: UInt16(clamping: v.width), height: UInt16(clamping: v.height))
    }
    xcb_shape_rectangles(
      conn, UInt8(XCB_SHAPE_SO_SET.rawValue), UInt8(XCB_SHAPE_SK_BOUNDING.rawValue), 0, window, 0, 0,
      UInt32(r.count), r)
  }

  func shapeSelectInput(_ window: UInt32) { xcb_shape_select_input(conn, window, 1) }

  func selectSelectionInput(_ window: UInt32, selection: UInt32, mask: UInt32) {
    xcb_xfixes_select_selection_input(conn, window, selection, mask)
  }

  func setCloseDownMode(retainPermanent: Bool) {
    let m = retainPermanent ? XCB_CLOSE_DOWN_RETAIN_PERMANENT : XCB_CLOSE_DOWN_DESTROY_ALL
    xcb_set_close_down_mode(conn, UInt8(m.rawValue))
  }

  func createPixmap(_ pixmap: UInt32, depth: UInt8, drawable: UInt32, width: UInt16, height: UInt16) {
    xcb_create_pixmap(conn, depth, pixmap, drawable, width, height)
  }

  func createGC(_ gc: UInt32, drawable: UInt32, mask: UInt32, values: [UInt32]) {
    xcb_create_gc(conn, gc, drawable, mask, values)
  }

  func changeGC(_ gc: UInt32, mask: UInt32, values: [UInt32]) { xcb_change_gc(conn, gc, mask, values) }

  func freeGC(_ gc: UInt32) { xcb_free_gc(conn, gc) }

  func fillRectangles(_ drawable: UInt32, gc: UInt32, _ rects: [(x: Int16, y: Int16, width: UInt16, height: UInt16)]) {
    let r = rects.map { xcb_rectangle_t(x: $0.x, y: $0.y, width: $0.width, height: $0.height) }
    xcb_poly_fill_rectangle(conn, drawable, gc, UInt32(r.count), r)
  }

  func drawText(_ drawable: UInt32, gc: UInt32, x: Int16, y: Int16, _ bytes: [UInt8]) {
    xcb_image_text_8(
      conn, UInt8(min(255, bytes.count)), drawable, gc, x, y, bytes.prefix(255).map { CChar(bitPattern: $0) })
  }

  func moduleRequest(major: UInt8, minor: UInt8, _ argument: UInt32) {
    _ = CXCB_shield_ext_request(conn, major, minor, argument, 0)
  }

  func openFont(_ font: UInt32, name: String) -> Bool {
    let ck = name.withCString { xcb_open_font_checked(conn, font, UInt16(strlen($0)), $0) }
    guard let err = xcb_request_check(conn, ck) else { return true }
    free(err)
    return false
  }
}
