// Capture tools written in python, perl or ruby run as their interpreter: the audit log and
// the notice named `python3.11` instead of the tool, and a `capture.known` rule on the
// tool's name missed it. The daemon now reads which script an
// interpreter runs (`ClientIdentity.script`). A real python client (ctypes over libxcb)
// reads the secure window with GetImage.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Interpreted capture tools are named by their script", .serialized, .timeLimit(.minutes(3)))
struct ScriptNameTests {
  static let rect = PixelRect(x: 80, y: 80, width: 120, height: 90)

  /// A python capture tool: connects, waits `wait` seconds, reads the window `argv[1]`
  /// (GetImage, ZPixmap), prints the bytes read, exits.
  static let tool = """
    import ctypes, sys, time
    xcb = ctypes.CDLL("libxcb.so.1")
    class Cookie(ctypes.Structure):
        _fields_ = [("sequence", ctypes.c_uint)]
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_get_image.restype = Cookie
    xcb.xcb_get_image.argtypes = [ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint32, ctypes.c_int16,
        ctypes.c_int16, ctypes.c_uint16, ctypes.c_uint16, ctypes.c_uint32]
    xcb.xcb_get_image_reply.restype = ctypes.POINTER(ctypes.c_uint32 * 8)
    xcb.xcb_get_image_reply.argtypes = [ctypes.c_void_p, Cookie, ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    c = xcb.xcb_connect(None, None)
    time.sleep(float(sys.argv[4]))
    r = xcb.xcb_get_image_reply(c, xcb.xcb_get_image(c, 2, int(sys.argv[1]), 0, 0, int(sys.argv[2]), int(sys.argv[3]), 0xffffffff), None)
    print("read", 4 * r.contents[1] if r else 0)
    xcb.xcb_disconnect(c)
    """

  /// Writes the tool as `name` in a new directory; returns its path.
  static func writeTool(_ name: String) throws -> String {
    let dir = try makeTemporaryDirectory(prefix: "captureshield-script")
    let path = dir + "/" + name
    try tool.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  static func run(_ path: String, on server: XvfbServer, window: UInt32, wait: Double) async throws -> CommandResult {
    try await server.run(
      "/usr/bin/python3",
      ["-u", path, String(window), String(rect.width), String(rect.height), String(wait)], timeout: .seconds(30))
  }

  @Test("the audit names the script; the notice names the tool")
  func auditedByScript() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    let path = try Self.writeTool("shot.py")
    let result = try await Self.run(path, on: server, window: window.id, wait: 0.3)
    #expect(result.status == .exited(0), "\(result)")
    try await waitUntil("the capture is audited", timeout: .seconds(10)) {
      !daemon.auditEvents("capture-request").isEmpty
    }
    let r = daemon.auditEvents("capture-request").first
    print("capture-request: \(r ?? [:])")
    #expect(r?["script"] as? String == path, "\(r ?? [:])")
    #expect((r?["exe"] as? String)?.contains("python") == true, "\(r ?? [:])")
    try await waitUntil("the capture notice is audited", timeout: .seconds(10)) {
      !daemon.auditEvents("capture-notice").isEmpty
    }
    #expect(daemon.auditEvents("capture-notice").first?["program"] as? String == "shot.py")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("a capture.known rule on the script's name holds the shield up from its connection, before any request")
  func knownByScript() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, capture: {known: [{exe: \"*/shot.py\"}]}}")
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    // The rule's tool and, as the control, the same tool under another name.
    var known: [String: Bool] = [:]
    for name in ["shot.py", "other.py"] {
      let path = try Self.writeTool(name)
      let result = try await Self.run(path, on: server, window: window.id, wait: 1.5)
      #expect(result.status == .exited(0), "\(result)")
      try await waitUntil("\(name): every session ends", timeout: .seconds(10)) {
        daemon.auditEvents("session-start").count == daemon.auditEvents("session-end").count
      }
      known[name] = daemon.auditEvents("session-start").contains {
        $0["kind"] as? String == "known" && $0["script"] as? String == path
      }
    }
    print("known sessions by script: \(known)")
    #expect(known == ["shot.py": true, "other.py": false])
    await daemon.stop()
    window.close()
    await server.stop()
  }
}
