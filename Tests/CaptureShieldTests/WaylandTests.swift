import Testing

@testable import CaptureShield

/// The daemon says plainly when it runs inside a Wayland session.
@Test(
  arguments: [
    (["XDG_SESSION_TYPE": "wayland"], "XDG_SESSION_TYPE=wayland"),
    (["WAYLAND_DISPLAY": "wayland-0"], "WAYLAND_DISPLAY=wayland-0"),
    (["XDG_SESSION_TYPE": "x11"], nil),
    (["WAYLAND_DISPLAY": ""], nil),
    ([:], nil),
  ] as [([String: String], String?)])
func waylandSessionIsDetected(env: [String: String], expected: String?) {
  #expect(Watcher.waylandSession(env) == expected)
}
