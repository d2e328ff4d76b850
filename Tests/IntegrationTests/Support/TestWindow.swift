// A real X client in the test process: one top-level window of a solid colour, like an
// app showing a secret. It has its own xcb connection and an event thread that repaints
// the window (PolyFillRectangle, like an app drawing) on every Expose.

import CXCB
import Foundation
import Glibc
import ShieldTestSupport
import Synchronization

enum TestWindowError: Error, CustomStringConvertible {
  case closed
  case timedOut(String)

  var description: String {
    switch self {
    case .closed: "the test window's connection is closed"
    case .timedOut(let what): "timed out waiting for \(what)"
    }
  }
}

/// What the event thread has seen.
struct TestWindowEvents: Sendable {
  var isMapped = false
  var isDestroyed = false
  var mapCount = 0
  var unmapCount = 0
  var exposeCount = 0
  var repaintCount = 0
  var configureCount = 0
  var reparentedTo: UInt32?
  /// X errors received asynchronously on the window's connection.
  var errors: [String] = []
}

/// The property the app side sets on a window to ask for it to be shielded.
let secureWindowProperty = "_CAPTURE_SHIELD_SECURE"

final class TestWindow: Sendable {
  /// The X window id.
  let id: xcb_window_t
  let display: String
  let connection: TestXConnection

  private let gc: xcb_gcontext_t
  private let loop: WindowEventLoop
  private let isClosed = Mutex<Bool>(false)

  var color: RGB { loop.state.withLock { $0.color } }
  /// What the window's event thread has seen so far.
  var events: TestWindowEvents { loop.state.withLock { $0.events } }

  /// Opens a window on `server` with content area `rect` (root coordinates, honoured as long as
  /// there is no window manager; with one, USPosition asks it to keep the position).
  /// - Parameters:
  ///   - secure: set `_CAPTURE_SHIELD_SECURE` = 1 (CARDINAL/32) before mapping (app-side tag).
  ///   - instance, className: the two WM_CLASS strings.
  ///   - overrideRedirect: bypass the window manager (like menus, tooltips).
  ///   - map: map it and wait for MapNotify (`mapTimeout`); otherwise leave it unmapped.
  static func open(
    on server: XvfbServer, rect: PixelRect = PixelRect(x: 100, y: 100, width: 200, height: 150),
    color: RGB = .red, title: String = "CaptureShield test window",
    instance: String = "captureshield-test", className: String = "CaptureShieldTest",
    secure: Bool = false, overrideRedirect: Bool = false, borderWidth: Int = 0,
    map: Bool = true, mapTimeout: Duration = .seconds(5)
  ) async throws -> TestWindow {
    try await open(
      display: server.display, rect: rect, color: color, title: title, instance: instance,
      className: className, secure: secure, overrideRedirect: overrideRedirect,
      borderWidth: borderWidth, map: map, mapTimeout: mapTimeout)
  }

  static func open(
    display: String, rect: PixelRect = PixelRect(x: 100, y: 100, width: 200, height: 150),
    color: RGB = .red, title: String = "CaptureShield test window",
    instance: String = "captureshield-test", className: String = "CaptureShieldTest",
    secure: Bool = false, overrideRedirect: Bool = false, borderWidth: Int = 0,
    map: Bool = true, mapTimeout: Duration = .seconds(5)
  ) async throws -> TestWindow {
    let connection = try TestXConnection(display: display)
    let raw = connection.raw
    let window = connection.generateID()
    let pixel = connection.pixel(for: color)

    // Value list order must follow the mask bits: BACK_PIXEL, BORDER_PIXEL, OVERRIDE_REDIRECT,
    // EVENT_MASK.
    let mask =
      XCB_CW_BACK_PIXEL.rawValue | XCB_CW_BORDER_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue
      | XCB_CW_EVENT_MASK.rawValue
    let eventMask = XCB_EVENT_MASK_EXPOSURE.rawValue | XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue
    let values: [UInt32] = [pixel, connection.whitePixel, overrideRedirect ? 1 : 0, eventMask]
    try connection.check(
      xcb_create_window_checked(
        raw, UInt8(XCB_COPY_FROM_PARENT), window, connection.root, Int16(rect.x), Int16(rect.y),
        UInt16(rect.width), UInt16(rect.height), UInt16(borderWidth),
        UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), connection.rootVisual, mask, values),
      "CreateWindow")

    let gc = connection.generateID()
    let gcValues: [UInt32] = [pixel, 0]
    try connection.check(
      xcb_create_gc_checked(
        raw, gc, window, XCB_GC_FOREGROUND.rawValue | XCB_GC_GRAPHICS_EXPOSURES.rawValue, gcValues),
      "CreateGC")

    let testWindow = TestWindow(id: window, display: display, connection: connection, gc: gc, color: color)
    try testWindow.setString("WM_NAME", type: "STRING", title)
    try testWindow.setString("_NET_WM_NAME", type: "UTF8_STRING", title)
    try testWindow.setString("WM_CLASS", type: "STRING", instance + "\0" + className + "\0")
    try testWindow.setCardinal("_NET_WM_PID", UInt32(getpid()))
    // WM_NORMAL_HINTS: USPosition | USSize | PPosition | PSize, so a window manager keeps them.
    var hints = [UInt32](repeating: 0, count: 18)
    hints[0] = 1 | 2 | 4 | 8
    hints[1] = UInt32(bitPattern: Int32(rect.x))
    hints[2] = UInt32(bitPattern: Int32(rect.y))
    hints[3] = UInt32(rect.width)
    hints[4] = UInt32(rect.height)
    try testWindow.setProperty32("WM_NORMAL_HINTS", type: "WM_SIZE_HINTS", hints)
    if secure { try testWindow.setCardinal(secureWindowProperty, 1) }
    testWindow.loop.start()
    if map { try await testWindow.map(timeout: mapTimeout) }
    return testWindow
  }

  private init(id: xcb_window_t, display: String, connection: TestXConnection, gc: xcb_gcontext_t, color: RGB) {
    self.id = id
    self.display = display
    self.connection = connection
    self.gc = gc
    loop = WindowEventLoop(connection: connection, window: id, gc: gc, color: color)
  }

  deinit { close() }

  // MARK: Requests

  private func live() throws(TestWindowError) -> OpaquePointer {
    if isClosed.withLock({ $0 }) { throw .closed }
    return connection.raw
  }

  /// Sets a 32-bit property (format 32) of the given type.
  func setProperty32(_ name: String, type: String, _ values: [UInt32]) throws {
    let raw = try live()
    let atom = try connection.internAtom(name)
    let typeAtom = try connection.internAtom(type)
    try connection.check(
      xcb_change_property_checked(
        raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), id, atom, typeAtom, 32, UInt32(values.count), values),
      "ChangeProperty(\(name))")
  }

  /// Sets a CARDINAL/32 property, e.g. `setCardinal("_CAPTURE_SHIELD_SECURE", 1)`.
  func setCardinal(_ name: String, _ value: UInt32) throws {
    try setProperty32(name, type: "CARDINAL", [value])
  }

  /// Sets an 8-bit string property (`type` e.g. "STRING" or "UTF8_STRING").
  func setString(_ name: String, type: String, _ value: String) throws {
    let raw = try live()
    let atom = try connection.internAtom(name)
    let typeAtom = try connection.internAtom(type)
    let bytes = Array(value.utf8)
    try connection.check(
      xcb_change_property_checked(
        raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), id, atom, typeAtom, 8, UInt32(bytes.count), bytes),
      "ChangeProperty(\(name))")
  }

  func deleteProperty(_ name: String) throws {
    let raw = try live()
    let atom = try connection.internAtom(name)
    try connection.check(xcb_delete_property_checked(raw, id, atom), "DeleteProperty(\(name))")
  }

  /// Sets (or, with false, deletes) the app-side `_CAPTURE_SHIELD_SECURE` tag.
  func setSecure(_ secure: Bool) throws {
    if secure { try setCardinal(secureWindowProperty, 1) } else { try deleteProperty(secureWindowProperty) }
  }

  private func configure(_ mask: UInt16, _ values: [UInt32], _ request: String) throws {
    let raw = try live()
    try connection.check(xcb_configure_window_checked(raw, id, mask, values), request)
  }

  /// Moves the window (its outer top-left corner, relative to its parent). Returns once the
  /// server has processed the request (a window manager may still adjust it afterwards).
  func move(x: Int, y: Int) throws {
    try configure(
      UInt16(XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue),
      [UInt32(bitPattern: Int32(x)), UInt32(bitPattern: Int32(y))], "ConfigureWindow(move)")
  }

  func resize(width: Int, height: Int) throws {
    try configure(
      UInt16(XCB_CONFIG_WINDOW_WIDTH.rawValue | XCB_CONFIG_WINDOW_HEIGHT.rawValue),
      [UInt32(width), UInt32(height)], "ConfigureWindow(resize)")
  }

  func moveResize(to rect: PixelRect) throws {
    try configure(
      UInt16(
        XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue | XCB_CONFIG_WINDOW_WIDTH.rawValue
          | XCB_CONFIG_WINDOW_HEIGHT.rawValue),
      [
        UInt32(bitPattern: Int32(rect.x)), UInt32(bitPattern: Int32(rect.y)), UInt32(rect.width),
        UInt32(rect.height),
      ], "ConfigureWindow(move+resize)")
  }

  /// Raises the window to the top of its siblings.
  func raise() throws {
    try configure(
      UInt16(XCB_CONFIG_WINDOW_STACK_MODE.rawValue), [XCB_STACK_MODE_ABOVE.rawValue], "ConfigureWindow(raise)")
  }

  /// Maps the window and waits for MapNotify (with a window manager: until it really shows).
  func map(timeout: Duration = .seconds(5)) async throws {
    let raw = try live()
    try connection.check(xcb_map_window_checked(raw, id), "MapWindow")
    try await waitFor("MapNotify of 0x\(String(id, radix: 16))", timeout: timeout) { $0.isMapped }
    try connection.sync()
  }

  /// Unmaps the window and waits for UnmapNotify.
  func unmap(timeout: Duration = .seconds(5)) async throws {
    let raw = try live()
    try connection.check(xcb_unmap_window_checked(raw, id), "UnmapWindow")
    try await waitFor("UnmapNotify of 0x\(String(id, radix: 16))", timeout: timeout) { !$0.isMapped }
  }

  /// Repaints the whole window in its colour, as an app drawing a new frame would.
  func redraw() throws {
    let raw = try live()
    let size = try connection.drawableSize(id)
    var rectangle = xcb_rectangle_t(x: 0, y: 0, width: UInt16(size.width), height: UInt16(size.height))
    try connection.check(xcb_poly_fill_rectangle_checked(raw, id, gc, 1, &rectangle), "PolyFillRectangle")
    loop.state.withLock { $0.events.repaintCount += 1 }
  }

  /// Changes the colour (background pixel and drawing colour) and repaints.
  func setColor(_ color: RGB) throws {
    let raw = try live()
    let pixel = connection.pixel(for: color)
    loop.state.withLock { $0.color = color }
    try connection.check(
      xcb_change_window_attributes_checked(raw, id, XCB_CW_BACK_PIXEL.rawValue, [pixel]), "ChangeWindowAttributes")
    try connection.check(xcb_change_gc_checked(raw, gc, XCB_GC_FOREGROUND.rawValue, [pixel]), "ChangeGC")
    try redraw()
  }

  /// DestroyWindow from the owning client (the connection stays open).
  func destroy() throws {
    let raw = try live()
    try connection.check(xcb_destroy_window_checked(raw, id), "DestroyWindow")
  }

  /// Where the window's content is, relative to the root (TranslateCoordinates).
  func rootGeometry() throws -> WindowGeometry {
    _ = try live()
    return try connection.geometry(of: id)
  }

  /// Waits until the event thread's record satisfies `condition`.
  func waitFor(
    _ what: String, timeout: Duration = .seconds(5), _ condition: (TestWindowEvents) -> Bool
  ) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition(events) {
      if ContinuousClock.now >= deadline { throw TestWindowError.timedOut("\(what) (events so far: \(events))") }
      _ = try live()
      try await Task.sleep(for: .milliseconds(2))
    }
  }

  /// Stops the event thread and closes the connection, as when the app exits: the server then
  /// destroys the window. Idempotent; also done on deinit.
  func close() {
    let alreadyClosed = isClosed.withLock { closed in
      defer { closed = true }
      return closed
    }
    if alreadyClosed { return }
    loop.stop()
    connection.disconnect()
  }

  /// `close()`, then waits (on a separate connection) until the server has destroyed the window.
  func closeAndWaitUntilGone(timeout: Duration = .seconds(5)) async throws {
    let window = id
    close()
    let observer = try TestXConnection(display: display)
    let deadline = ContinuousClock.now + timeout
    while true {
      do {
        _ = try observer.geometry(of: window)
      } catch let error as XProtocolError
        where error.errorCode == XProtocolError.badWindow
        || error.errorCode == XProtocolError.badDrawable
      {
        return
      }
      if ContinuousClock.now >= deadline {
        throw TestWindowError.timedOut("window 0x\(String(window, radix: 16)) to disappear")
      }
      try await Task.sleep(for: .milliseconds(2))
    }
  }
}

/// The window's event thread: repaints on Expose and records what happened. Owned by the
/// TestWindow; never references it (so the window's deinit can stop it).
private final class WindowEventLoop: Sendable {
  let connection: TestXConnection
  let window: xcb_window_t
  let gc: xcb_gcontext_t
  let state: Mutex<(color: RGB, events: TestWindowEvents)>
  private let stopRequested = Atomic<Bool>(false)
  private let finished = Atomic<Bool>(false)
  private let started = Atomic<Bool>(false)

  init(connection: TestXConnection, window: xcb_window_t, gc: xcb_gcontext_t, color: RGB) {
    self.connection = connection
    self.window = window
    self.gc = gc
    state = Mutex((color, TestWindowEvents()))
  }

  func start() {
    started.store(true, ordering: .releasing)
    let thread = Thread { [self] in
      let raw = connection.raw
      let fd = xcb_get_file_descriptor(raw)
      while !stopRequested.load(ordering: .acquiring) {
        while let event = xcb_poll_for_event(raw) {
          handle(event)
          free(event)
        }
        if xcb_connection_has_error(raw) != 0 { break }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, 10)
      }
      finished.store(true, ordering: .releasing)
    }
    thread.name = "TestWindow 0x\(String(window, radix: 16)) events"
    thread.start()
  }

  /// Asks the thread to stop and waits until it no longer touches the connection.
  func stop() {
    guard started.load(ordering: .acquiring) else { return }
    stopRequested.store(true, ordering: .releasing)
    // The thread wakes at least every 10 ms.
    let deadline = ContinuousClock.now + .seconds(2)
    while !finished.load(ordering: .acquiring) && ContinuousClock.now < deadline { usleep(500) }
  }

  private func handle(_ event: UnsafeMutablePointer<xcb_generic_event_t>) {
    let raw = UnsafeRawPointer(event)
    switch Int32(CXCB_event_type(event)) {
    case 0:
      let error = raw.load(as: xcb_generic_error_t.self)
      state.withLock {
        $0.events.errors.append(
          "error \(error.error_code) major \(error.major_code) resource 0x\(String(error.resource_id, radix: 16))")
      }
    case XCB_EXPOSE:
      let expose = raw.load(as: xcb_expose_event_t.self)
      guard expose.window == window else { return }
      var rectangle = xcb_rectangle_t(
        x: Int16(bitPattern: expose.x), y: Int16(bitPattern: expose.y), width: expose.width, height: expose.height)
      xcb_poly_fill_rectangle(connection.raw, window, gc, 1, &rectangle)
      connection.flush()
      state.withLock {
        $0.events.exposeCount += 1
        $0.events.repaintCount += 1
      }
    case XCB_MAP_NOTIFY:
      let map = raw.load(as: xcb_map_notify_event_t.self)
      guard map.window == window else { return }
      state.withLock {
        $0.events.isMapped = true
        $0.events.mapCount += 1
      }
    case XCB_UNMAP_NOTIFY:
      let unmap = raw.load(as: xcb_unmap_notify_event_t.self)
      guard unmap.window == window else { return }
      state.withLock {
        $0.events.isMapped = false
        $0.events.unmapCount += 1
      }
    case XCB_CONFIGURE_NOTIFY:
      let configure = raw.load(as: xcb_configure_notify_event_t.self)
      guard configure.window == window else { return }
      state.withLock { $0.events.configureCount += 1 }
    case XCB_REPARENT_NOTIFY:
      let reparent = raw.load(as: xcb_reparent_notify_event_t.self)
      guard reparent.window == window else { return }
      state.withLock { $0.events.reparentedTo = reparent.parent }
    case XCB_DESTROY_NOTIFY:
      let destroy = raw.load(as: xcb_destroy_notify_event_t.self)
      guard destroy.window == window else { return }
      state.withLock {
        $0.events.isDestroyed = true
        $0.events.isMapped = false
      }
    default:
      break
    }
  }
}
