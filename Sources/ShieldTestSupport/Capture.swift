// Screen captures the way real users take them: real tools (xwd, ImageMagick import, ffmpeg
// x11grab, scrot, maim) run against the test's Xvfb, their files converted to binary PPM by
// ImageMagick `convert` and decoded in Swift; plus two captures done from the test process
// itself over XCB (core GetImage and Composite NameWindowPixmap). Used by the integration
// tests and by the benchmark's quarantine-rate row.

import CXCB
import Foundation

public enum CaptureError: Error, CustomStringConvertible {
  case toolFailed(String, CommandResult)
  case noOutput(String, directory: String)
  case extensionMissing(String)

  public var description: String {
    switch self {
    case .toolFailed(let tool, let result): "\(tool) capture failed: \(result)"
    case .noOutput(let tool, let directory): "\(tool) wrote no image into \(directory)"
    case .extensionMissing(let name): "the X server has no \(name) extension"
    }
  }
}

/// Every capture path the harness knows.
public enum CaptureMethod: String, CaseIterable, Sendable, CustomStringConvertible {
  /// `xwd -root -silent`: core GetImage on the root.
  case xwdRoot
  /// `xwd -id WINDOW -silent`: GetImage on the window (includes its border).
  case xwdWindow
  /// `import -window root`: GrabServer + GetImage on the root, second connection.
  case importRoot
  /// `ffmpeg -f x11grab`: MIT-SHM ShmGetImage on the root, several frames.
  case ffmpeg
  /// `scrot`: GrabServer + ShmGetImage on the root.
  case scrot
  /// `maim`: Composite RedirectSubwindows + RENDER Composite into its own pixmap.
  case maim
  /// Core GetImage on the root from the test process.
  case getImageRoot
  /// Core GetImage on the window from the test process (content only, no border).
  case getImageWindow
  /// Composite RedirectWindow(Automatic) + NameWindowPixmap + GetImage on that pixmap, from the
  /// test process (includes the border).
  case compositePixmap

  public var description: String { rawValue }

  /// True if the capture contains only the window, false if it is the whole screen.
  public var isWindowCapture: Bool {
    switch self {
    case .xwdWindow, .getImageWindow, .compositePixmap: true
    case .xwdRoot, .importRoot, .ffmpeg, .scrot, .maim, .getImageRoot: false
    }
  }

  /// Captures with this method. `frames` holds one image, or several for ffmpeg;
  /// `windowRect` is where `window`'s content must appear in each frame if nothing hides it.
  public func capture(window: UInt32, on server: XvfbServer, ffmpegFrames: Int = 3) async throws -> CaptureResult {
    let geometry = try server.geometry(of: window)
    let border = geometry.borderWidth
    let insideWindow = PixelRect(x: 0, y: 0, width: geometry.width, height: geometry.height)
    let frames: [RGBImage]
    var windowRect = geometry.rect
    switch self {
    case .xwdRoot: frames = [try await Capture.xwdRoot(on: server)]
    case .xwdWindow:
      frames = [try await Capture.xwdWindow(window, on: server)]
      windowRect = insideWindow.offsetBy(dx: border, dy: border)
    case .importRoot: frames = [try await Capture.importRoot(on: server)]
    case .ffmpeg: frames = try await Capture.ffmpegFrames(on: server, count: ffmpegFrames)
    case .scrot: frames = [try await Capture.scrot(on: server)]
    case .maim: frames = [try await Capture.maim(on: server)]
    case .getImageRoot: frames = [try Capture.getImageRoot(on: server)]
    case .getImageWindow:
      frames = [try Capture.getImage(of: window, on: server)]
      windowRect = insideWindow
    case .compositePixmap:
      frames = [try Capture.compositeWindowPixmap(of: window, on: server)]
      windowRect = insideWindow.offsetBy(dx: border, dy: border)
    }
    return CaptureResult(method: self, frames: frames, windowRect: windowRect)
  }
}

public struct CaptureResult: Sendable {
  public let method: CaptureMethod
  /// One image per frame (ffmpeg: several).
  public let frames: [RGBImage]
  /// Where the window's content appears in each frame (root coordinates for screen captures).
  public let windowRect: PixelRect

  /// For each frame, the number of pixels of `color` inside `windowRect`.
  public func counts(of color: RGB, tolerance: UInt8 = 0) -> [Int] {
    frames.map { $0.count(of: color, tolerance: tolerance, in: windowRect) }
  }
}

/// The capture implementations.
public enum Capture {
  /// Set CAPTURESHIELD_KEEP_CAPTURES=1 to keep every tool's raw output (the directory is
  /// printed); by default it is deleted after decoding.
  public static var keepFiles: Bool {
    !(ProcessInfo.processInfo.environment["CAPTURESHIELD_KEEP_CAPTURES"] ?? "").isEmpty
  }

  public static let toolTimeout = Duration.seconds(30)

  /// Runs `body` with a fresh directory for a tool's output files.
  private static func inScratchDirectory<T>(
    _ tool: String, _ body: (String) async throws -> T
  ) async throws -> T {
    let directory = try makeTemporaryDirectory(prefix: "captureshield-\(tool)")
    defer {
      if keepFiles { print("[capture] kept \(tool) output in \(directory)") } else { removeTree(directory) }
    }
    return try await body(directory)
  }

  private static func run(
    _ tool: String, _ arguments: [String], on server: XvfbServer, timeout: Duration = toolTimeout
  ) async throws {
    let result = try await server.run(tool, arguments, timeout: timeout)
    guard result.succeeded else { throw CaptureError.toolFailed(tool, result) }
  }

  /// Converts an image file of ImageMagick format `format` ("xwd", "png", ...) into binary PPM
  /// (`file`.ppm) and decodes it. Output goes to a file, and `-alpha off` drops an alpha
  /// channel instead of blending it against a background.
  public static func convertToPPM(_ file: String, format: String, environment: [String: String]) async throws
    -> RGBImage
  {
    let output = file + ".ppm"
    let result = try await runCommand(
      "convert", [format + ":" + file, "-alpha", "off", "-depth", "8", "ppm:" + output], environment: environment,
      timeout: toolTimeout)
    guard result.succeeded else { throw CaptureError.toolFailed("convert", result) }
    return try RGBImage(pnmFile: output)
  }

  /// `xwd -root -silent`.
  public static func xwdRoot(on server: XvfbServer) async throws -> RGBImage {
    try await inScratchDirectory("xwd") { directory in
      let file = directory + "/root.xwd"
      try await run("xwd", ["-root", "-silent", "-out", file], on: server)
      return try await convertToPPM(file, format: "xwd", environment: server.environment)
    }
  }

  /// `xwd -id WINDOW -silent` (the image includes the window's border).
  public static func xwdWindow(_ window: UInt32, on server: XvfbServer) async throws -> RGBImage {
    try await inScratchDirectory("xwd") { directory in
      let file = directory + "/window.xwd"
      try await run("xwd", ["-id", "0x" + String(window, radix: 16), "-silent", "-out", file], on: server)
      return try await convertToPPM(file, format: "xwd", environment: server.environment)
    }
  }

  /// ImageMagick `import -window root`.
  public static func importRoot(on server: XvfbServer) async throws -> RGBImage {
    try await inScratchDirectory("import") { directory in
      let file = directory + "/root.png"
      try await run("import", ["-window", "root", "png:" + file], on: server)
      return try await convertToPPM(file, format: "png", environment: server.environment)
    }
  }

  /// `ffmpeg -f x11grab`: `count` frames at `frameRate` fps of `region` (whole screen if nil),
  /// written as individual PPM files by ffmpeg itself. The mouse pointer is drawn by default,
  /// as ffmpeg does.
  public static func ffmpegFrames(
    on server: XvfbServer, count: Int = 3, frameRate: Int = 15, region: PixelRect? = nil,
    drawMouse: Bool = true
  ) async throws -> [RGBImage] {
    try await inScratchDirectory("ffmpeg") { directory in
      let area = region ?? PixelRect(x: 0, y: 0, width: server.width, height: server.height)
      try await run(
        "ffmpeg",
        [
          "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "x11grab", "-draw_mouse", drawMouse ? "1" : "0",
          "-framerate", String(frameRate), "-video_size", "\(area.width)x\(area.height)",
          "-i", "\(server.display).0+\(area.x),\(area.y)", "-frames:v", String(count), "-r", String(frameRate),
          "-y", directory + "/frame_%04d.ppm",
        ], on: server)
      let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        .filter { $0.hasPrefix("frame_") && $0.hasSuffix(".ppm") }.sorted()
      guard !files.isEmpty else { throw CaptureError.noOutput("ffmpeg", directory: directory) }
      return try files.map { try RGBImage(pnmFile: directory + "/" + $0) }
    }
  }

  /// `scrot` (whole screen; scrot does not draw the pointer unless asked with -p).
  /// `delay`: `scrot -d delay` (scrot connects first, then waits, then reads).
  public static func scrot(on server: XvfbServer, delay: Int = 0) async throws -> RGBImage {
    try await inScratchDirectory("scrot") { directory in
      let file = directory + "/screen.png"
      try await run("scrot", ["--overwrite"] + (delay > 0 ? ["-d", "\(delay)"] : []) + [file], on: server)
      return try await convertToPPM(file, format: "png", environment: server.environment)
    }
  }

  /// `maim` (whole screen). Like ffmpeg, maim draws the pointer unless told not to
  /// (`hideCursor` adds `--hidecursor`); in a fresh Xvfb it sits at the screen's centre.
  public static func maim(on server: XvfbServer, hideCursor: Bool = false) async throws -> RGBImage {
    try await inScratchDirectory("maim") { directory in
      let file = directory + "/screen.png"
      try await run("maim", (hideCursor ? ["--hidecursor"] : []) + ["--format", "png", file], on: server)
      return try await convertToPPM(file, format: "png", environment: server.environment)
    }
  }

  /// `gnome-screenshot -f FILE` (GTK; without GNOME Shell it falls back to X11 GetImage).
  public static func gnomeScreenshot(on server: XvfbServer) async throws -> RGBImage {
    try await inScratchDirectory("gnome-screenshot") { directory in
      let file = directory + "/screen.png"
      try await run("gnome-screenshot", ["-f", file], on: server)
      return try await convertToPPM(file, format: "png", environment: server.environment)
    }
  }

  /// `flameshot full -p FILE` (Qt), without a session bus: it takes the picture itself.
  public static func flameshot(on server: XvfbServer) async throws -> RGBImage {
    try await inScratchDirectory("flameshot") { directory in
      let file = directory + "/screen.png"
      var environment = server.environment
      environment["DBUS_SESSION_BUS_ADDRESS"] = nil
      let result = try await runCommand(
        "flameshot", ["full", "-p", file], environment: environment, timeout: toolTimeout)
      guard result.succeeded else { throw CaptureError.toolFailed("flameshot", result) }
      return try await convertToPPM(file, format: "png", environment: server.environment)
    }
  }

  /// Core GetImage (ZPixmap) of the whole root window, from the test process.
  public static func getImageRoot(on server: XvfbServer) throws -> RGBImage {
    let connection = try server.connect()
    defer { connection.disconnect() }
    return try connection.getImage(of: connection.root)
  }

  /// Core GetImage (ZPixmap) of a window, pixmap or the root, from the test process.
  public static func getImage(of drawable: UInt32, on server: XvfbServer, rect: PixelRect? = nil) throws -> RGBImage {
    let connection = try server.connect()
    defer { connection.disconnect() }
    return try connection.getImage(of: drawable, rect: rect)
  }

  /// What a compositor sees: Composite RedirectWindow(window, Automatic), NameWindowPixmap,
  /// GetImage on that pixmap (includes the border). The redirection ends when the connection
  /// closes at the end of this call. Throws XProtocolError (BadMatch) for an unmapped window.
  public static func compositeWindowPixmap(of window: UInt32, on server: XvfbServer) throws -> RGBImage {
    let connection = try server.connect()
    defer { connection.disconnect() }
    let raw = connection.raw
    guard connection.hasExtension("Composite") else { throw CaptureError.extensionMissing("Composite") }
    let versionCookie = xcb_composite_query_version(raw, 0, 4)
    _ = try connection.reply("CompositeQueryVersion") { xcb_composite_query_version_reply(raw, versionCookie, $0) }
    try connection.check(
      xcb_composite_redirect_window_checked(raw, window, UInt8(XCB_COMPOSITE_REDIRECT_AUTOMATIC.rawValue)),
      "CompositeRedirectWindow")
    let pixmap = connection.generateID()
    try connection.check(
      xcb_composite_name_window_pixmap_checked(raw, window, pixmap), "CompositeNameWindowPixmap")
    defer { xcb_free_pixmap(raw, pixmap) }
    return try connection.getImage(of: pixmap)
  }
}
