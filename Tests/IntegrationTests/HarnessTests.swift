// The harness proves itself: a real Xvfb, a real red window, real capture tools. These are
// the baseline the shield tests invert (there, the same captures must see 0 red pixels).

// CaptureShield also has a (public) TestWindow; this module's own types shadow it. The import
// stays to prove that for the shield tests, which import both.
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Integration harness", .timeLimit(.minutes(2)))
struct HarnessTests {
  static let red = RGB.red
  static let windowRect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  @Test("every capture path sees the unshielded red window, exactly", arguments: CaptureMethod.allCases)
  func everyCaptureSeesTheRedWindow(_ method: CaptureMethod) async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.windowRect, color: Self.red)
    #expect(try window.rootGeometry().rect == Self.windowRect)

    let result = try await method.capture(window: window.id, on: server)
    let expectedRect = method.isWindowCapture ? PixelRect(x: 0, y: 0, width: 200, height: 150) : Self.windowRect
    #expect(result.windowRect == expectedRect)
    #expect(result.frames.count == (method == .ffmpeg ? 3 : 1))
    for (index, frame) in result.frames.enumerated() {
      if method.isWindowCapture {
        #expect(frame.width == 200 && frame.height == 150, "frame \(index)")
      } else {
        #expect(frame.width == server.width && frame.height == server.height, "frame \(index)")
      }
      let inside = frame.count(of: Self.red, in: result.windowRect)
      let total = frame.count(of: (255, 0, 0))
      #expect(
        inside == 200 * 150,
        "\(method) frame \(index): \(inside) red in \(result.windowRect); colours there: \(frame.dominantColors(in: result.windowRect))"
      )
      #expect(total == 200 * 150, "\(method) frame \(index): \(total) red pixels in the whole image")
    }
    window.close()
    await server.stop()
  }

  @Test("parallel servers get distinct displays and stop cleanly")
  func parallelServers() async throws {
    async let first = XvfbServer.start()
    async let second = XvfbServer.start(width: 640, height: 480)
    async let third = XvfbServer.start(extraArguments: ["+extension", "Composite"])
    let servers = try await [first, second, third]
    #expect(Set(servers.map(\.display)).count == 3)
    for server in servers {
      #expect(server.environment["DISPLAY"] == server.display)
      #expect(server.environment["PATH"] != nil)
      let connection = try server.connect()
      #expect(connection.screenWidth == server.width && connection.screenHeight == server.height)
      connection.disconnect()
      let result = try await server.run("xdpyinfo", ["-queryExtensions"]).checked()
      #expect(result.stdoutText.contains("name of display:    \(server.display)"))
    }
    for server in servers {
      await server.stop()
      #expect(!server.isRunning)
      #expect(throws: XConnectionError.self) { try server.connect() }
    }
  }

  @Test("a missing Xvfb is a clear error that says how to install it")
  func missingXvfb() async throws {
    let error = await #expect(throws: XvfbError.self) {
      try await XvfbServer.start(environment: ["PATH": "/nonexistent"])
    }
    #expect(error?.description.contains("Xvfb is not installed") == true)
    #expect(error?.description.contains("make test") == true)
  }

  @Test("the test window follows moves, resizes, unmaps and carries the secure tag")
  func windowOperations() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.windowRect, color: Self.red, secure: true)
    let observer = try server.connect()
    #expect(try observer.cardinalProperty(secureWindowProperty, of: window.id) == 1)
    #expect(try observer.cardinalProperty("_NET_WM_PID", of: window.id) == UInt32(getpid()))
    #expect(window.events.isMapped)

    try window.move(x: 400, y: 300)
    let moved = PixelRect(x: 400, y: 300, width: 200, height: 150)
    #expect(try window.rootGeometry().rect == moved)
    var screen = try Capture.getImageRoot(on: server)
    #expect(screen.count(of: Self.red, in: moved) == 200 * 150)
    #expect(screen.count(of: Self.red) == 200 * 150)

    try window.resize(width: 100, height: 50)
    screen = try Capture.getImageRoot(on: server)
    #expect(screen.count(of: Self.red, in: PixelRect(x: 400, y: 300, width: 100, height: 50)) == 100 * 50)
    #expect(screen.count(of: Self.red) == 100 * 50)

    try window.setColor(.blue)
    screen = try Capture.getImageRoot(on: server)
    #expect(screen.count(of: .blue) == 100 * 50)
    try window.setColor(Self.red)

    try window.setSecure(false)
    #expect(try observer.cardinalProperty(secureWindowProperty, of: window.id) == nil)

    try await window.unmap()
    screen = try Capture.getImageRoot(on: server)
    #expect(screen.count(of: Self.red) == 0)
    let getImageError = #expect(throws: XProtocolError.self) { try Capture.getImage(of: window.id, on: server) }
    #expect(getImageError?.errorCode == XProtocolError.badMatch)
    let compositeError = #expect(throws: XProtocolError.self) {
      try Capture.compositeWindowPixmap(of: window.id, on: server)
    }
    #expect(compositeError?.errorCode == XProtocolError.badMatch)

    try await window.map()
    #expect(try Capture.getImage(of: window.id, on: server).count(of: Self.red) == 100 * 50)
    #expect(window.events.exposeCount >= 2)

    try await window.closeAndWaitUntilGone()
    screen = try Capture.getImageRoot(on: server)
    #expect(screen.count(of: Self.red) == 0)
    await server.stop()
  }

  @Test("captures still see the window under a window manager and a compositor")
  func windowManagerAndCompositor() async throws {
    let server = try await XvfbServer.start()
    let windowManager = try await server.startWindowManager()
    let compositor = try await server.startCompositor()
    let window = try await TestWindow.open(on: server, rect: Self.windowRect, color: Self.red)
    try await window.waitFor("openbox to reparent the window") { $0.reparentedTo != nil }

    let geometry = try window.rootGeometry()
    #expect(geometry.width == 200 && geometry.height == 150)
    // The compositor paints the screen asynchronously.
    try await waitUntil("the composited screen to show the window") {
      try Capture.getImageRoot(on: server).count(of: Self.red, in: geometry.rect) == 200 * 150
    }
    for method in [CaptureMethod.xwdRoot, .maim, .getImageWindow, .compositePixmap] {
      let result = try await method.capture(window: window.id, on: server)
      #expect(result.counts(of: Self.red) == [200 * 150], "\(method)")
    }
    window.close()
    await compositor.stop()
    await windowManager.stop()
    await server.stop()
  }

  @Test("commands: exit status, both output streams, no pipe deadlock, timeouts, background processes")
  func processHelpers() async throws {
    let result = try await runCommand("sh", ["-c", "echo out; echo err >&2; exit 3"])
    #expect(result.status == .exited(3))
    #expect(result.stdoutText == "out\n" && result.stderrText == "err\n")
    #expect(throws: ProcessError.self) { try result.checked() }

    let big = try await runCommand("sh", ["-c", "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2"])
    #expect(big.stdout.count == 3_000_000 && big.stderr.count == 3_000_000)

    let echoed = try await runCommand("cat", stdin: Data("piped".utf8))
    #expect(echoed.stdoutText == "piped")

    let environment = try await runCommand(
      "sh", ["-c", "echo $FOO"], environment: ["FOO": "bar", "PATH": "/usr/bin:/bin"])
    #expect(environment.stdoutText == "bar\n")

    let started = ContinuousClock.now
    await #expect(throws: ProcessError.self) { try await runCommand("sleep", ["30"], timeout: .milliseconds(200)) }
    // The timeout ended it: far sooner than the 30 s the command would take (a loose bound, the
    // machine may be busy).
    #expect(ContinuousClock.now - started < .seconds(20))

    #expect(throws: ProcessError.self) { try BackgroundProcess("no-such-tool-captureshield") }
    let background = try BackgroundProcess("sh", ["-c", "echo ready; exec sleep 30"])
    try await waitUntil("the background process to print") { background.stdout.count > 0 }
    #expect(background.isRunning)
    let stopped = await background.stop()
    #expect(stopped.status == .signaled(SIGTERM))
    #expect(stopped.stdoutText == "ready\n")
    #expect(!background.isRunning)
  }

  @Test("PPM/PGM decoding: comments, maxval, grey")
  func pnmDecoding() throws {
    var p6 = Data("P6\n#xwdump\n2 1\n255\n".utf8)
    p6.append(contentsOf: [255, 0, 0, 1, 2, 3])
    let image = try RGBImage.decodePNM(p6)
    #expect(image.width == 2 && image.height == 1)
    #expect(image[0, 0] == .red && image[1, 0] == RGB(1, 2, 3))
    #expect(image.count(of: (255, 0, 0)) == 1)
    #expect(image.count(of: (0, 1, 2), tolerance: 1) == 1)
    #expect(image.count(of: .red, in: PixelRect(x: 1, y: 0, width: 5, height: 5)) == 0)

    var wide = Data("P6 1 1 65535\n".utf8)
    wide.append(contentsOf: [0xff, 0xff, 0x00, 0x00, 0x80, 0x00])
    #expect(try RGBImage.decodePNM(wide)[0, 0] == RGB(255, 0, 128))

    var grey = Data("P5\n1 1\n255\n".utf8)
    grey.append(7)
    #expect(try RGBImage.decodePNM(grey)[0, 0] == RGB(7, 7, 7))

    #expect(throws: ImageDecodingError.self) { try RGBImage.decodePNM(Data("P6\n2 2\n255\n".utf8)) }
    #expect(try RGBImage.decodePNM(image.ppmData()) == image)
  }
}
