internal import CXCB
import Foundation

/// Options of `shieldctl test-window`.
public struct TestWindowOptions: Sendable {
  public var display: String?
  /// 0xRRGGBB.
  public var color: UInt32 = 0xFF0000
  public var title: String = "CaptureShield secret test window"
  public var wmClass: String = "CaptureShieldTest"
  public var x = 100, y = 100, width = 320, height = 200
  /// Set `_CAPTURE_SHIELD_SECURE` = 1 before mapping (the app-side API).
  public var tag = false
  /// A secure view: this rectangle (x, y, width, height in the window) painted in
  /// `viewColor` and declared in `_CAPTURE_SHIELD_VIEWS` before mapping.
  public var view: (x: Int, y: Int, width: Int, height: Int)?
  public var viewColor: UInt32 = 0xFF0000
  /// Print the window id (0x...) on stdout once mapped.
  public var printID = false
  public init() {}
}

/// A solid-colour app window, painted by the app on every Expose (like a real app),
/// for the demo and the tests. It prints capture notifications it receives.
public enum TestWindow {
  public static func run(_ o: TestWindowOptions) -> Int32 {
    let x: XConnection
    do { x = try XConnection(display: o.display) } catch {
      FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
      return 1
    }
    let w = x.generateID()
    var values: [UInt32] = [
      o.color, XCB_EVENT_MASK_EXPOSURE.rawValue | XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue,
    ]
    xcb_create_window(
      x.conn, 0, w, x.root, Int16(clamping: o.x), Int16(clamping: o.y), UInt16(clamping: o.width),
      UInt16(clamping: o.height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), x.rootVisual,
      XCB_CW_BACK_PIXEL.rawValue | XCB_CW_EVENT_MASK.rawValue, &values)
    let cls = Array((o.wmClass.lowercased() + "\0" + o.wmClass + "\0").utf8)
    xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, 67, 31, 8, UInt32(cls.count), cls)
    let title = Array(o.title.utf8)
    let a = x.atoms([
      "_NET_WM_NAME", "UTF8_STRING", ProtocolAtom.secure, "_NET_WM_PID", ProtocolAtom.captureChanged,
      ProtocolAtom.notify, ProtocolAtom.views,
    ])
    xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, a[0], a[1], 8, UInt32(title.count), title)
    xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, 39, 31, 8, UInt32(title.count), title)
    var pid = UInt32(getpid())
    xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, a[3], 6, 32, 1, &pid)
    // It prints the capture notices: it opts in to them (PROTOCOL.md section 2).
    var notices = CaptureNotices.captureChanged.rawValue
    xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, a[5], 6, 32, 1, &notices)
    if o.tag {
      var one: UInt32 = 1
      xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, a[2], 6, 32, 1, &one)
    }
    if let v = o.view {
      var r = [v.x, v.y, v.width, v.height].map { UInt32(truncatingIfNeeded: $0) }
      xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, a[6], 6, 32, 4, &r)
    }
    let gc = x.generateID()
    var gv: [UInt32] = [o.color]
    xcb_create_gc(x.conn, gc, w, XCB_GC_FOREGROUND.rawValue, &gv)
    let viewGC = x.generateID()
    var vv: [UInt32] = [o.viewColor]
    xcb_create_gc(x.conn, viewGC, w, XCB_GC_FOREGROUND.rawValue, &vv)
    xcb_map_window(x.conn, w)
    x.flush()
    if o.printID {
      FileHandle.standardOutput.write(Data(("0x" + String(w, radix: 16) + "\n").utf8))
    }
    while let ev = xcb_wait_for_event(x.conn) {
      let raw = UnsafeRawPointer(ev)
      switch Int32(CXCB_event_type(ev)) {
      case XCB_EXPOSE:
        var r = xcb_rectangle_t(x: 0, y: 0, width: 32767, height: 32767)
        xcb_poly_fill_rectangle(x.conn, w, gc, 1, &r)
        if let v = o.view {
          var vr = xcb_rectangle_t(
            x: Int16(clamping: v.x), y: Int16(clamping: v.y), width: UInt16(clamping: v.width),
            height: UInt16(clamping: v.height))
          xcb_poly_fill_rectangle(x.conn, w, viewGC, 1, &vr)
        }
        x.flush()
      case XCB_CLIENT_MESSAGE:
        let e = raw.load(as: xcb_client_message_event_t.self)
        if e.type == a[4] {
          FileHandle.standardOutput.write(Data("capture-changed active=\(e.data.data32.0)\n".utf8))
        }
      case XCB_DESTROY_NOTIFY:
        free(ev)
        return 0
      default: break
      }
      free(ev)
    }
    return 0
  }
}
