// How long a secure window's shield is up while one program runs (rows 9 and 11): the app
// that owns the window selects SubstructureNotify on it, so the daemon's shield (a child)
// mapping and unmapping arrive as events on the app's connection.
import CXCB
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// One program run under the watch.
struct ShieldTime {
  /// Seconds the shield was up, from the start until `settle` seconds after the exit.
  var up = 0.0
  var maps = 0
  var unmaps = 0
  /// Seconds the process ran.
  var ran = 0.0

  /// Starts `executable` and follows `window`'s shield until the process has been gone for
  /// `settle` seconds (a shield still up then counts until then). `upAtStart`: a shield
  /// already up (another process's launch) counts from the start. Throws when the process
  /// does not end within 30 s.
  static func measure(
    _ app: XClient, _ window: xcb_window_t, fd: Int32, executable: String, arguments: [String],
    environment: [String: String], upAtStart: Bool = false, settle: Double = 0.4, name: String? = nil
  ) throws -> ShieldTime {
    var t = ShieldTime()
    let t0 = monotonicNow()
    var upSince: Double? = upAtStart ? t0 : nil
    let child = try ChildProcess(executable, arguments, environment: environment)
    var exitedAt: Double? = nil
    while true {
      var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      _ = poll(&p, 1, 1)
      let now = monotonicNow()
      while let ev = xcb_poll_for_event(app.conn) {
        switch Int32(ev.pointee.response_type & 0x7f) {
        case XCB_MAP_NOTIFY:
          t.maps += 1
          if upSince == nil { upSince = now }
        case XCB_UNMAP_NOTIFY, XCB_DESTROY_NOTIFY:
          if Int32(ev.pointee.response_type & 0x7f) == XCB_UNMAP_NOTIFY { t.unmaps += 1 }
          if let s = upSince { t.up += now - s }
          upSince = nil
        default: break
        }
        free(ev)
      }
      if exitedAt == nil, child.poll() != nil { exitedAt = now }
      if let e = exitedAt, now - e > settle {
        if let s = upSince { t.up += now - s }
        t.ran = e - t0
        return t
      }
      if now - t0 > 30 { throw BenchError("\(name ?? executable): did not settle within 30 s") }
    }
  }
}
