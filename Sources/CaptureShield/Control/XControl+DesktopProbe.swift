// What `shieldctl doctor` asks a display: the X server, the extensions CaptureShield needs,
// the Xorg module, the compositor. Queries only; nothing here changes X state.

internal import CXCB
import Foundation

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
      // The module trusts shieldctl only as the daemon: ask about the daemon's connection
      // (the owner of the manager selection), not this command's.
      let owner = managerOwner
      facts.moduleTrustsDaemon = owner == 0 ? nil : module.trust(of: owner, on: x).map { $0 != .none }
    }
    let owner = x.selectionOwner(x.atom("_NET_WM_CM_S" + String(x.screenNumber)))
    if owner != 0 {
      facts.compositor = ProcessInfoReader.identity(pid: x.clientPID(of: owner))
    }
    facts.ptraceScope = ProcessInfoReader.readSmallFile("/proc/sys/kernel/yama/ptrace_scope").flatMap {
      Int(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
    return facts
  }
}
