// Secure views under the Xorg module with the daemon (rule
// views): the module censors exactly the rectangles of `_CAPTURE_SHIELD_VIEWS`, and the
// daemon, which lists the window as secure by its views, must not give it the policy tag
// (that would make the whole window secret). The same 400x300 green window with a 200x100
// red area as `SecureViewTests`; xwd (untrusted) of the root: 0 red and all 100,000 green
// pixels, also after the area moved with the property; control: no property, 20,000 red.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Secure views under the Xorg module", .serialized, .timeLimit(.minutes(4)))
struct ServerViewTests {
  @Test("the module censors the view exactly; the daemon adds no policy tag", arguments: [true, false])
  func viewCensored(_ declared: Bool) async throws {
    #expect(XorgModule.isBuilt, "build the module first: make xorg-module")
    let server = try await XvfbServer.startXorg(
      moduleDirectory: XorgModule.directory, moduleOptions: XorgModule.snippetOptions())
    let (window, child) = try await SecureViewTests.open(on: server, tagged: false, views: declared)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    #expect(try daemon.state()?.enforcement?.kind == "server")
    if declared {
      try await waitUntil("the daemon lists the window's views", timeout: .seconds(10)) {
        try daemon.state()?.windows.contains { $0.id == window.id && $0.reason.hasPrefix("views") } ?? false
      }
    }
    try await daemon.waitUntilCaughtUp()
    func shot() async throws -> (Int, Int) {
      let image = try await Capture.xwdRoot(on: server)
      return (image.count(of: .red), image.count(of: .green))
    }
    let before = try await shot()
    let c = window.connection
    try c.check(
      xcb_configure_window_checked(
        c.raw, child, UInt16(XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue), [UInt32(20), UInt32(20)]),
      "ConfigureWindow(child)")
    if declared { try SecureViewTests.setViews(window, PixelRect(x: 20, y: 20, width: 200, height: 100)) }
    try await daemon.waitUntilCaughtUp()
    let after = try await shot()
    let policyTag = try c.cardinalProperty("_CAPTURE_SHIELD_POLICY", of: window.id)
    print(
      "secure view under the module, property \(declared ? "set" : "absent (control)"): xwd (red, green) \(before),"
        + " moved \(after); policy tag \(policyTag.map(String.init) ?? "none")")
    #expect(policyTag == nil || policyTag == 0, "a policy tag that makes the whole window secure")
    if declared {
      #expect(before == (0, 100_000) && after == (0, 100_000), "\(before) \(after)")
    } else {
      #expect(before == (20_000, 100_000) && after == (20_000, 100_000), "control: \(before) \(after)")
    }
    await daemon.stop()
    window.close()
    await server.stop()
  }
}
