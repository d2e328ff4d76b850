// Row 6: what recording costs capture tools and drawing clients. `xwd -root` runs repeatedly
// with no detector, the lean catalog and the standard one (in-process CaptureDetector on RECORD),
// and a drawing-heavy client sends 20,000 CopyArea between its own pixmaps (recorded by the
// standard catalog, not by the lean one) and a round trip. Two rounds; the second is reported.
// (Formerly the opt-in integration test "recording overhead on xwd (benchmark)".)
import CXCB
import CaptureShield
import Foundation
import ShieldTestSupport

func runDetectorOverheadBenchmark(display: String, scratch: String, table: inout [TableRow]) throws -> [String: Any] {
  print("\n6. recording overhead (capture detector on RECORD, xwd -root and 20000 own CopyArea)")
  let configurations: [(key: String, name: String, catalog: CaptureCatalog?)] = [
    ("none", "no detector", nil),
    ("lean", "lean catalog", CaptureCatalog.standard.withoutFrequentRequests),
    ("standard", "standard catalog", CaptureCatalog.standard),
  ]
  var environment = ProcessInfo.processInfo.environment
  environment["DISPLAY"] = display
  var figures: [String: Any] = [:]
  for round in 0..<2 {
    for configuration in configurations {
      let detector = try configuration.catalog.map { try CaptureDetector(display: display, catalog: $0) }
      func pump() {
        detector?.poke()
        repeat { _ = detector?.drain(isSecure: { _ in false }) } while detector?.moreAvailable == true
      }
      var times: [Double] = []
      for _ in 0..<15 {
        let xwd = try ChildProcess(
          "xwd", ["-root", "-silent", "-out", scratch + "/root.xwd"], environment: environment)
        while xwd.poll() == nil {
          pump()
          usleep(1_000)
        }
        times.append((ContinuousClock.now - xwd.started) / .milliseconds(1))
      }
      times.sort()
      let x = try XClient(display: display)
      let pixmap = x.id()
      xcb_create_pixmap(x.conn, 24, pixmap, x.root, 64, 64)
      let gc = x.id()
      xcb_create_gc(x.conn, gc, pixmap, 0, nil)
      x.sync()
      let started = monotonicNow()
      for _ in 0..<20000 { xcb_copy_area(x.conn, pixmap, pixmap, gc, 0, 0, 1, 1, 32, 32) }
      // The round trip, polled, so the detector keeps draining while the server works.
      let cookie = xcb_get_input_focus(x.conn)
      x.flush()
      var reply: UnsafeMutableRawPointer?
      while xcb_poll_for_reply(x.conn, cookie.sequence, &reply, nil) == 0 {
        if x.hasError { throw BenchError("the X connection broke during the CopyArea burst") }
        pump()
        usleep(1_000)
      }
      free(reply)
      let drawing = (monotonicNow() - started) * 1000
      if round == 1 {
        print(
          String(
            format: "  with %@: xwd -root median %.1f ms (min %.1f); 20000 own CopyArea + sync %.1f ms",
            configuration.name, times[7], times[0], drawing))
        figures[configuration.key] = [
          "xwd_ms_median": times[7], "xwd_ms_min": times[0], "copyarea_20000_ms": drawing,
        ]
        table.append(
          TableRow(
            row: "6 detector", figure: "xwd / 20000 CopyArea, \(configuration.name)",
            value: String(format: "%.1f / %.1f ms", times[7], drawing), target: "-", met: nil))
      }
    }
  }
  return figures
}
