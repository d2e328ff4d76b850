// The ways another client of the display tampers with a shield window, sent as an
// attacker's X requests (ShieldTamperTests, FrameShieldTests).

import CXCB
import Glibc
import ShieldTestSupport
import Testing

/// One way another client tampers with a shield, and the words its audit record must
/// contain.
enum ShieldTamper: String, CaseIterable, CustomTestStringConvertible, Sendable {
  case move, resize, boundingShape, clipShape, reparent, lower, redirect, unmap, destroy

  /// The attacks that leave the shield in place but displaced (`ShieldTamperTests`).
  static let displacing: [ShieldTamper] = [.move, .resize, .boundingShape, .clipShape, .reparent, .lower, .redirect]

  var testDescription: String { rawValue }

  /// What the `shield-tampered` record's `how` says.
  var audited: String {
    switch self {
    case .move, .resize: "moved or resized"
    case .boundingShape: "given a bounding shape"
    case .clipShape: "given a clip shape"
    case .reparent: "reparented into window"
    case .lower: "restacked"
    case .redirect: "redirected (Composite, Manual) by client"
    case .unmap: "unmapped by another client"
    case .destroy: "destroyed by another client"
    }
  }

  /// Sends the attack on `attacker`'s connection and waits for the server's answer.
  func send(_ attacker: TestXConnection, shield: UInt32) throws {
    let raw = attacker.raw
    switch self {
    case .move:
      var v: [UInt32] = [30000, 30000]
      let mask = UInt16(XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue)
      try attacker.check(xcb_configure_window_checked(raw, shield, mask, &v), "ConfigureWindow(x, y)")
    case .resize:
      var v: [UInt32] = [1, 1]
      let mask = UInt16(XCB_CONFIG_WINDOW_WIDTH.rawValue | XCB_CONFIG_WINDOW_HEIGHT.rawValue)
      try attacker.check(xcb_configure_window_checked(raw, shield, mask, &v), "ConfigureWindow(width, height)")
    case .boundingShape, .clipShape:
      let kind = self == .boundingShape ? XCB_SHAPE_SK_BOUNDING : XCB_SHAPE_SK_CLIP
      try attacker.check(
        xcb_shape_rectangles_checked(
          raw, UInt8(XCB_SHAPE_SO_SET.rawValue), UInt8(kind.rawValue), 0, shield, 0, 0, 0, nil),
        "ShapeRectangles(empty)")
    case .reparent:
      // A hidden window of the attacker's own.
      let hidden = attacker.generateID()
      try attacker.check(
        xcb_create_window_checked(
          raw, 0, hidden, attacker.root, 0, 0, 100, 100, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, 0,
          nil),
        "CreateWindow")
      try attacker.check(xcb_reparent_window_checked(raw, shield, hidden, 0, 0), "ReparentWindow")
    case .lower:
      var v: [UInt32] = [UInt32(XCB_STACK_MODE_BELOW.rawValue)]
      try attacker.check(
        xcb_configure_window_checked(raw, shield, UInt16(XCB_CONFIG_WINDOW_STACK_MODE.rawValue), &v),
        "ConfigureWindow(Below)")
    case .redirect:
      free(xcb_composite_query_version_reply(raw, xcb_composite_query_version(raw, 0, 4), nil))
      try attacker.check(
        xcb_composite_redirect_window_checked(raw, shield, UInt8(XCB_COMPOSITE_REDIRECT_MANUAL.rawValue)),
        "CompositeRedirectWindow(Manual)")
    case .unmap:
      try attacker.check(xcb_unmap_window_checked(raw, shield), "UnmapWindow")
    case .destroy:
      try attacker.check(xcb_destroy_window_checked(raw, shield), "DestroyWindow")
    }
  }
}
