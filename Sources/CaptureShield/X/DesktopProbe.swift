// What `shieldctl doctor` asks a display: the X server, the extensions CaptureShield needs,
// the Xorg module, the compositor. Queries only; nothing here changes X state.

internal import CXCB
import Foundation

/// Facts about a display that decide what protection it can get.
public struct DesktopFacts: Sendable, Hashable {
  /// The display name.
  public var display: String
  /// The server's vendor string and release number (from the connection setup).
  public var vendor: String
  public var vendorRelease: UInt32
  /// RECORD: request-level capture detection.
  public var hasRecord: Bool
  /// X-Resource: a client's PID (identity); the daemon cannot run without it.
  public var hasXRes: Bool
  /// SHAPE: shields follow shaped windows; the daemon cannot run without it.
  public var hasShape: Bool
  /// Xwayland (the XWAYLAND extension): the Wayland compositor, not X, decides captures.
  public var isXwayland: Bool
  /// The CaptureShield Xorg module's version ("1.2"), nil when it is not loaded.
  public var moduleVersion: String?
  /// Whether the module trusts this shieldctl (its Trust list), when the module is loaded.
  public var moduleTrustsShieldctl: Bool?
  /// The owner of `_NET_WM_CM_Sn` (a compositing manager), as the X server identifies it.
  public var compositor: ClientIdentity?

  public init(
    display: String, vendor: String = "", vendorRelease: UInt32 = 0, hasRecord: Bool = true, hasXRes: Bool = true,
    hasShape: Bool = true, isXwayland: Bool = false, moduleVersion: String? = nil, moduleTrustsShieldctl: Bool? = nil,
    compositor: ClientIdentity? = nil
  ) {
    self.display = display
    self.vendor = vendor
    self.vendorRelease = vendorRelease
    self.hasRecord = hasRecord
    self.hasXRes = hasXRes
    self.hasShape = hasShape
    self.isXwayland = isXwayland
    self.moduleVersion = moduleVersion
    self.moduleTrustsShieldctl = moduleTrustsShieldctl
    self.compositor = compositor
  }
}

extension XControl {
  /// Whether the screen's RandR outputs are Xwayland's (named `XWAYLAND0`, ...): the
  /// XWAYLAND extension exists only since Xwayland 23.1, and Debian 12's is 22.1.
  func xwaylandOutputs() -> Bool {
    guard x.hasExtension("RANDR") else { return false }
    if let v = xcb_randr_query_version_reply(x.conn, xcb_randr_query_version(x.conn, 1, 3), nil) { free(v) }
    guard
      let r = xcb_randr_get_screen_resources_current_reply(
        x.conn, xcb_randr_get_screen_resources_current(x.conn, x.root), nil)
    else { return false }
    defer { free(r) }
    let outputs = UnsafeBufferPointer(
      start: xcb_randr_get_screen_resources_current_outputs(r),
      count: Int(xcb_randr_get_screen_resources_current_outputs_length(r)))
    let cookies = outputs.map { xcb_randr_get_output_info(x.conn, $0, r.pointee.config_timestamp) }
    var xwayland = false
    for c in cookies {
      guard let info = xcb_randr_get_output_info_reply(x.conn, c, nil) else { continue }
      let name = String(
        decoding: UnsafeBufferPointer(
          start: xcb_randr_get_output_info_name(info), count: Int(xcb_randr_get_output_info_name_length(info))),
        as: UTF8.self)
      if name.hasPrefix("XWAYLAND") { xwayland = true }
      free(info)
    }
    return xwayland
  }

  /// The facts `shieldctl doctor` checks (queries only).
  public func desktopFacts() -> DesktopFacts {
    let setup = xcb_get_setup(x.conn)!
    let vendor = String(
      decoding: UnsafeRawBufferPointer(
        start: xcb_setup_vendor(setup), count: Int(xcb_setup_vendor_length(setup))),
      as: UTF8.self)
    var facts = DesktopFacts(
      display: x.displayName, vendor: vendor, vendorRelease: setup.pointee.release_number,
      hasRecord: x.hasExtension("RECORD"), hasXRes: x.hasExtension("X-Resource"), hasShape: x.hasExtension("SHAPE"),
      isXwayland: x.hasExtension("XWAYLAND") || xwaylandOutputs())
    if let module = ServerModule.probe(x) {
      facts.moduleVersion = module.versionString
      facts.moduleTrustsShieldctl = module.callerTrust != .none
    }
    let owner = x.selectionOwner(x.atom("_NET_WM_CM_S" + String(x.screenNumber)))
    if owner != 0 {
      facts.compositor = ProcessInfoReader.identity(pid: x.clientPID(of: owner))
    }
    return facts
  }
}
