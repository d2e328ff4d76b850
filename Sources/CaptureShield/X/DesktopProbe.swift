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
      isXwayland: x.hasExtension("XWAYLAND"))
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
