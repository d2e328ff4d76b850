// InputOnly windows created during a capture session: while shields are
// up, every new top-level gets a shield at once, before its facts are read; an InputOnly
// window cannot hold one (CreateWindow of an InputOutput child: BadMatch). That was logged
// as an `error` record each time (20 in 2.6 s at shutter's start). It is an expected race
// now, and the window is dropped once its class is read (it shows no pixels).

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("InputOnly windows during a capture", .serialized, .timeLimit(.minutes(2)))
struct InputOnlyTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  @Test("20 InputOnly top-levels created during a session: no error record, none shielded")
  func noErrorRecords() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    // A capture session that lasts while the capturer stays connected.
    let capturer = try server.connect()
    _ = try capturer.getImage(of: capturer.root)
    try await daemon.waitShielded(window.id)
    let app = try server.connect()
    var created: [(UInt32, Bool)] = []
    for i in 0..<40 {
      let inputOnly = i % 2 == 0
      let w = app.generateID()
      try app.check(
        xcb_create_window_checked(
          app.raw, inputOnly ? 0 : UInt8(XCB_COPY_FROM_PARENT), w, app.root, Int16(10 * i), 10, 20, 20, 0,
          UInt16((inputOnly ? XCB_WINDOW_CLASS_INPUT_ONLY : XCB_WINDOW_CLASS_INPUT_OUTPUT).rawValue), 0, 0, nil),
        "CreateWindow")
      try app.check(xcb_map_window_checked(app.raw, w), "MapWindow")
      created.append((w, inputOnly))
      try await Task.sleep(for: .milliseconds(20))
    }
    // The daemon has handled every event before a marker window's.
    try await daemon.waitUntilCaughtUp(retitling: window)
    let shielded = Set(daemon.auditEvents("shield").compactMap { $0["window"] as? String })
    func hexID(_ w: UInt32) -> String { "0x" + String(w, radix: 16) }
    let inputOnlyShielded = created.filter { $0.1 && shielded.contains(hexID($0.0)) }.map(\.0)
    let inputOutputShielded = created.filter { !$0.1 && shielded.contains(hexID($0.0)) }.map(\.0)
    let errors = daemon.auditEvents("error")
    print(
      "InputOnly windows during a session: error records \(errors.count) \(errors.prefix(3)); shielded: InputOnly"
        + " \(inputOnlyShielded.count) of 20, InputOutput \(inputOutputShielded.count) of 20")
    #expect(errors.isEmpty, "\(errors.prefix(5))")
    #expect(inputOnlyShielded.isEmpty, "InputOnly windows shielded: \(inputOnlyShielded)")
    // (On 4f65192, before the change, the same run logged 20 error records, one per
    // InputOnly window: the shield put up at once under each.)
    app.disconnect()
    capturer.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }
}
