// Password fields anywhere: the loop's side of `AccessibilityWatch` (the accessibility bus,
// on its own thread). The fields arrive as plain values; the loop adds where the windows of
// their applications are, and the engine decides (`Engine.passwordFieldsShown`).

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  /// Starts or stops following the accessibility bus as `accessibility.passwordFields` says
  /// (at start and after each reload).
  func syncAccessibility() {
    if engine.policy.passwordFields {
      guard channels.accessibility == nil else { return }
      channels.accessibility = AccessibilityWatch(environment: ProcessInfo.processInfo.environment, log: log)
      channels.accessibility?.start()
    } else if let a = channels.accessibility {
      a.stop()
      channels.accessibility = nil
    }
  }

  /// The fields the accessibility thread found, with the mapped top-level windows of their
  /// applications, to the engine.
  func drainAccessibility() {
    guard let fields = channels.accessibility?.take() else { return }
    trackPending()  // windows created since: their facts first
    let pids = Set(fields.map(\.pid))
    // The client's PID as the X server knows it (X-Resource), the window's own otherwise.
    let candidates: [(id: WindowID, pid: Int)] = engine.windows.values.compactMap { w in
      guard !w.info.inputOnly, let pid = engine.effectiveFacts(w.info).pid, pids.contains(pid)
      else { return nil }
      return (w.info.id, pid)
    }.sorted { $0.id < $1.id }
    let areas = windowAreas(candidates.map(\.id))
    let frames = candidates.compactMap { w in areas[w.id].map { TopLevelFrame(window: w.id, pid: w.pid, area: $0) } }
    log.debug(
      "accessibility: \(fields.count) fields, windows \(frames.map { "\(String($0.window, radix: 16)) pid \($0.pid) \($0.area)" })"
    )
    let before = (Set(engine.passwordViews.keys), engine.passwordFocus)
    apply(.accessibleFields(fields, frames: frames))
    // A window made secure (or its field focused) after the focus went to it: the keyboard
    // watch looks again, and names the listening clients as for any focused secure window.
    if before != (Set(engine.passwordViews.keys), engine.passwordFocus) { keylogFocusChanged() }
  }

  /// Each viewable window's area in root coordinates, inside its border (pipelined
  /// GetWindowAttributes, GetGeometry and TranslateCoordinates, one round trip); windows
  /// gone or not viewable are left out. Viewable as the server says: the engine's `mapped`
  /// of a client window a window manager framed was seen false while it was on screen.
  private func windowAreas(_ ids: [UInt32]) -> [UInt32: ScreenRect] {
    let cookies = ids.map {
      (
        xcb_get_window_attributes(x.conn, $0), xcb_get_geometry(x.conn, $0),
        xcb_translate_coordinates(x.conn, $0, x.root, 0, 0)
      )
    }
    var out: [UInt32: ScreenRect] = [:]
    for (id, (a, g, t)) in zip(ids, cookies) {
      let attributes = xcb_get_window_attributes_reply(x.conn, a, nil)
      let geometry = xcb_get_geometry_reply(x.conn, g, nil)
      let translated = xcb_translate_coordinates_reply(x.conn, t, nil)
      defer {
        free(attributes)
        free(geometry)
        free(translated)
      }
      guard let attributes, attributes.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue), let geometry,
        let translated
      else { continue }
      out[id] = ScreenRect(
        x: Int(translated.pointee.dst_x), y: Int(translated.pointee.dst_y), width: Int(geometry.pointee.width),
        height: Int(geometry.pointee.height))
    }
    return out
  }
}
