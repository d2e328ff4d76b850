// A thin, test-only XCB client: connection, atoms, geometry, GetImage and error reporting.
// Everything here talks to the X server directly from the test process through CXCB.

import CXCB
import Glibc
import Synchronization

/// An X protocol error (the reply to a checked request or a request with a reply).
public struct XProtocolError: Error, CustomStringConvertible, Equatable {
  public let request: String
  public let errorCode: UInt8
  public let majorOpcode: UInt8
  public let minorOpcode: UInt16
  public let resourceID: UInt32

  public static let badMatch: UInt8 = 8
  public static let badWindow: UInt8 = 3
  public static let badDrawable: UInt8 = 9
  public static let badAccess: UInt8 = 10

  public var name: String {
    let names = [
      1: "BadRequest", 2: "BadValue", 3: "BadWindow", 4: "BadPixmap", 5: "BadAtom", 6: "BadCursor",
      7: "BadFont", 8: "BadMatch", 9: "BadDrawable", 10: "BadAccess", 11: "BadAlloc",
      12: "BadColormap", 13: "BadGContext", 14: "BadIDChoice", 15: "BadName", 16: "BadLength",
      17: "BadImplementation",
    ]
    return names[Int(errorCode)] ?? "error \(errorCode)"
  }

  public var description: String {
    "\(request) failed: \(name) (major \(majorOpcode), minor \(minorOpcode), resource 0x"
      + String(resourceID, radix: 16) + ")"
  }

  public init(_ request: String, _ error: UnsafeMutablePointer<xcb_generic_error_t>) {
    self.request = request
    errorCode = error.pointee.error_code
    majorOpcode = error.pointee.major_code
    minorOpcode = error.pointee.minor_code
    resourceID = error.pointee.resource_id
  }
}

public enum XConnectionError: Error, CustomStringConvertible {
  case connectFailed(display: String, code: Int32)
  case connectionBroken(display: String, code: Int32)
  case noReply(String)
  case extensionMissing(String)
  case unsupportedImage(String)

  public var description: String {
    switch self {
    case .connectFailed(let display, let code):
      "cannot connect to X display \(display) (xcb error \(code)); is the server running?"
    case .connectionBroken(let display, let code):
      "X connection to \(display) broke (xcb error \(code))"
    case .noReply(let request): "\(request): no reply (connection closed?)"
    case .extensionMissing(let name): "X server lacks the \(name) extension"
    case .unsupportedImage(let detail): "unsupported image format: \(detail)"
    }
  }
}

/// Position and size of a window, with the position relative to the root window's origin.
/// `x`/`y` is where the window's *inside* (its content, excluding the border) starts.
public struct WindowGeometry: Sendable, Equatable, CustomStringConvertible {
  public var x: Int
  public var y: Int
  public var width: Int
  public var height: Int
  public var borderWidth: Int
  public var isViewable: Bool

  public init(x: Int, y: Int, width: Int, height: Int, borderWidth: Int, isViewable: Bool) {
    self.x = x
    self.y = y
    self.width = width
    self.height = height
    self.borderWidth = borderWidth
    self.isViewable = isViewable
  }

  /// The content area in root coordinates, i.e. where the window's pixels appear in a
  /// root-window capture (if nothing covers it).
  public var rect: PixelRect { PixelRect(x: x, y: y, width: width, height: height) }

  public var description: String {
    "\(width)x\(height)+\(x)+\(y) border \(borderWidth)\(isViewable ? "" : " (not viewable)")"
  }
}

/// One xcb connection. xcb connections are thread-safe, hence `@unchecked Sendable`.
public final class TestXConnection: @unchecked Sendable {
  public let raw: OpaquePointer
  public let display: String
  public let root: xcb_window_t
  public let rootVisual: xcb_visualid_t
  public let rootDepth: UInt8
  public let screenWidth: Int
  public let screenHeight: Int
  public let blackPixel: UInt32
  public let whitePixel: UInt32
  /// Channel masks of the root visual (TrueColor on Xvfb).
  public let redMask: UInt32
  public let greenMask: UInt32
  public let blueMask: UInt32
  public let imageByteOrderLSBFirst: Bool
  /// bits per pixel and scanline pad (bits) for each depth, from the connection setup.
  public let pixmapFormats: [UInt8: (bitsPerPixel: Int, scanlinePad: Int)]
  private let disconnected = Mutex(false)

  public init(display: String) throws(XConnectionError) {
    var screenNumber: Int32 = 0
    guard let connection = xcb_connect(display, &screenNumber) else {
      throw .connectFailed(display: display, code: -1)
    }
    let code = xcb_connection_has_error(connection)
    guard code == 0 else {
      xcb_disconnect(connection)
      throw .connectFailed(display: display, code: code)
    }
    raw = connection
    self.display = display
    let setup = xcb_get_setup(connection)!
    var screens = xcb_setup_roots_iterator(setup)
    for _ in 0..<screenNumber where screens.rem > 0 { xcb_screen_next(&screens) }
    let screen = screens.data!.pointee
    root = screen.root
    rootVisual = screen.root_visual
    rootDepth = screen.root_depth
    screenWidth = Int(screen.width_in_pixels)
    screenHeight = Int(screen.height_in_pixels)
    blackPixel = screen.black_pixel
    whitePixel = screen.white_pixel
    imageByteOrderLSBFirst = setup.pointee.image_byte_order == UInt8(XCB_IMAGE_ORDER_LSB_FIRST.rawValue)

    var masks: (UInt32, UInt32, UInt32) = (0xff_0000, 0x00_ff00, 0x00_00ff)
    var depths = xcb_screen_allowed_depths_iterator(screens.data)
    search: while depths.rem > 0 {
      var visuals = xcb_depth_visuals_iterator(depths.data)
      while visuals.rem > 0 {
        let visual = visuals.data.pointee
        if visual.visual_id == screen.root_visual {
          masks = (visual.red_mask, visual.green_mask, visual.blue_mask)
          break search
        }
        xcb_visualtype_next(&visuals)
      }
      xcb_depth_next(&depths)
    }
    (redMask, greenMask, blueMask) = masks

    var formats: [UInt8: (Int, Int)] = [:]
    var formatIterator = xcb_setup_pixmap_formats_iterator(setup)
    while formatIterator.rem > 0 {
      let format = formatIterator.data.pointee
      formats[format.depth] = (Int(format.bits_per_pixel), Int(format.scanline_pad))
      xcb_format_next(&formatIterator)
    }
    pixmapFormats = formats
  }

  deinit { disconnect() }

  /// Closes the connection (the server then frees the client's resources). Idempotent; no
  /// request may be made afterwards.
  public func disconnect() {
    let first = disconnected.withLock { done in
      defer { done = true }
      return !done
    }
    if first { xcb_disconnect(raw) }
  }

  // MARK: Basics

  public func flush() { _ = xcb_flush(raw) }

  public func generateID() -> UInt32 { xcb_generate_id(raw) }

  /// Throws if the connection has been closed or broken.
  public func checkConnection() throws(XConnectionError) {
    let code = xcb_connection_has_error(raw)
    if code != 0 { throw .connectionBroken(display: display, code: code) }
  }

  /// A round trip: when it returns, the server has processed every earlier request.
  public func sync() throws(XConnectionError) {
    let reply = xcb_get_input_focus_reply(raw, xcb_get_input_focus(raw), nil)
    guard let reply else {
      try checkConnection()
      throw .noReply("GetInputFocus")
    }
    free(reply)
  }

  /// Waits for the result of a `_checked` request and throws its error, if any.
  public func check(_ cookie: xcb_void_cookie_t, _ request: String) throws {
    if let error = xcb_request_check(raw, cookie) {
      defer { free(error) }
      throw XProtocolError(request, error)
    }
    try checkConnection()
  }

  /// Fetches a reply, converting an X error into `XProtocolError`. The caller owns the reply
  /// and must `free` it.
  public func ownedReply<Reply>(
    _ request: String,
    _ fetch: (UnsafeMutablePointer<UnsafeMutablePointer<xcb_generic_error_t>?>) -> UnsafeMutablePointer<Reply>?
  ) throws -> UnsafeMutablePointer<Reply> {
    var error: UnsafeMutablePointer<xcb_generic_error_t>?
    let reply = fetch(&error)
    if let error {
      defer { free(error) }
      free(reply)
      throw XProtocolError(request, error)
    }
    guard let reply else {
      try checkConnection()
      throw XConnectionError.noReply(request)
    }
    return reply
  }

  /// Fetches a fixed-size reply and copies it out.
  public func reply<Reply>(
    _ request: String,
    _ fetch: (UnsafeMutablePointer<UnsafeMutablePointer<xcb_generic_error_t>?>) -> UnsafeMutablePointer<Reply>?
  ) throws -> Reply {
    let reply = try ownedReply(request, fetch)
    defer { free(reply) }
    return reply.pointee
  }

  public func internAtom(_ name: String, onlyIfExists: Bool = false) throws -> xcb_atom_t {
    let cookie = xcb_intern_atom(raw, onlyIfExists ? 1 : 0, UInt16(name.utf8.count), name)
    return try reply("InternAtom(\(name))") { xcb_intern_atom_reply(raw, cookie, $0) }.atom
  }

  public func hasExtension(_ name: String) -> Bool {
    let cookie = xcb_query_extension(raw, UInt16(name.utf8.count), name)
    guard let reply = xcb_query_extension_reply(raw, cookie, nil) else { return false }
    defer { free(reply) }
    return reply.pointee.present != 0
  }

  // MARK: Windows

  /// Geometry of `window` relative to the root (TranslateCoordinates + GetGeometry), so it is
  /// right also for windows reparented by a window manager.
  public func geometry(of window: xcb_window_t) throws -> WindowGeometry {
    let geometryCookie = xcb_get_geometry(raw, window)
    let translateCookie = xcb_translate_coordinates(raw, window, root, 0, 0)
    let attributesCookie = xcb_get_window_attributes(raw, window)
    let geometry = try reply("GetGeometry") { xcb_get_geometry_reply(raw, geometryCookie, $0) }
    let origin = try reply("TranslateCoordinates") {
      xcb_translate_coordinates_reply(raw, translateCookie, $0)
    }
    let attributes = try reply("GetWindowAttributes") {
      xcb_get_window_attributes_reply(raw, attributesCookie, $0)
    }
    return WindowGeometry(
      x: Int(origin.dst_x), y: Int(origin.dst_y), width: Int(geometry.width),
      height: Int(geometry.height), borderWidth: Int(geometry.border_width),
      isViewable: attributes.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue))
  }

  /// Width, height and depth of any drawable (window or pixmap). Width/height exclude a
  /// window's border.
  public func drawableSize(_ drawable: xcb_drawable_t) throws -> (width: Int, height: Int, depth: UInt8, border: Int) {
    let cookie = xcb_get_geometry(raw, drawable)
    let geometry = try reply("GetGeometry") { xcb_get_geometry_reply(raw, cookie, $0) }
    return (Int(geometry.width), Int(geometry.height), geometry.depth, Int(geometry.border_width))
  }

  /// Reads a 32-bit CARDINAL (or any format-32) property; nil if absent.
  public func cardinalProperty(_ name: String, of window: xcb_window_t) throws -> UInt32? {
    let atom = try internAtom(name)
    let cookie = xcb_get_property(raw, 0, window, atom, UInt32(XCB_GET_PROPERTY_TYPE_ANY.rawValue), 0, 1)
    let reply = try ownedReply("GetProperty(\(name))") { xcb_get_property_reply(raw, cookie, $0) }
    defer { free(reply) }
    guard reply.pointee.format == 32, xcb_get_property_value_length(reply) >= 4 else { return nil }
    return xcb_get_property_value(reply)!.load(as: UInt32.self)
  }

  /// Owner of a selection such as `_NET_WM_CM_S0` (0 if none).
  public func selectionOwner(_ name: String) throws -> xcb_window_t {
    let atom = try internAtom(name)
    let cookie = xcb_get_selection_owner(raw, atom)
    return try reply("GetSelectionOwner(\(name))") { xcb_get_selection_owner_reply(raw, cookie, $0) }.owner
  }

  /// A WINDOW property of the root such as `_NET_SUPPORTING_WM_CHECK` (nil if absent).
  public func windowProperty(_ name: String, of window: xcb_window_t) throws -> xcb_window_t? {
    let atom = try internAtom(name)
    let cookie = xcb_get_property(raw, 0, window, atom, UInt32(XCB_ATOM_WINDOW.rawValue), 0, 1)
    let reply = try ownedReply("GetProperty(\(name))") { xcb_get_property_reply(raw, cookie, $0) }
    defer { free(reply) }
    guard reply.pointee.format == 32, xcb_get_property_value_length(reply) >= 4 else { return nil }
    return xcb_get_property_value(reply)!.load(as: UInt32.self)
  }

  public func atomName(_ atom: xcb_atom_t) throws -> String {
    let cookie = xcb_get_atom_name(raw, atom)
    let reply = try ownedReply("GetAtomName(\(atom))") { xcb_get_atom_name_reply(raw, cookie, $0) }
    defer { free(reply) }
    let length = Int(xcb_get_atom_name_name_length(reply))
    let bytes = UnsafeRawBufferPointer(start: xcb_get_atom_name_name(reply), count: length)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// X-Resource QueryClientResources for the client that owns `xid` (any resource of it):
  /// resource type name -> count, e.g. "CompositeClientSubwindows" for a client that
  /// redirects the subwindows of some window (a compositor).
  public func resourceTypes(ofClientOwning xid: UInt32) throws -> [String: Int] {
    let versionCookie = xcb_res_query_version(raw, 1, 2)
    _ = try reply("XResQueryVersion") { xcb_res_query_version_reply(raw, versionCookie, $0) }
    let cookie = xcb_res_query_client_resources(raw, xid)
    let reply = try ownedReply("XResQueryClientResources") { xcb_res_query_client_resources_reply(raw, cookie, $0) }
    var types: [(xcb_atom_t, Int)] = []
    var iterator = xcb_res_query_client_resources_types_iterator(reply)
    while iterator.rem > 0 {
      types.append((iterator.data.pointee.resource_type, Int(iterator.data.pointee.count)))
      xcb_res_type_next(&iterator)
    }
    free(reply)
    var named: [String: Int] = [:]
    for (atom, count) in types { named[try atomName(atom), default: 0] += count }
    return named
  }

  // MARK: Images

  /// Core GetImage (ZPixmap, all planes) of `rect` of `drawable` (whole drawable if nil),
  /// decoded to RGB with the root visual's channel masks.
  public func getImage(of drawable: xcb_drawable_t, rect: PixelRect? = nil) throws -> RGBImage {
    let area: PixelRect
    if let rect {
      area = rect
    } else {
      let size = try drawableSize(drawable)
      area = PixelRect(x: 0, y: 0, width: size.width, height: size.height)
    }
    let cookie = xcb_get_image(
      raw, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), drawable, Int16(area.x), Int16(area.y),
      UInt16(area.width), UInt16(area.height), UInt32.max)
    let reply = try ownedReply("GetImage(0x\(String(drawable, radix: 16)))") { xcb_get_image_reply(raw, cookie, $0) }
    defer { free(reply) }
    let length = Int(xcb_get_image_data_length(reply))
    let data = UnsafeRawBufferPointer(start: xcb_get_image_data(reply), count: length)
    return try decodeZPixmap(data, width: area.width, height: area.height, depth: reply.pointee.depth)
  }

  /// Decodes ZPixmap data of the given depth (TrueColor, masks of the root visual).
  public func decodeZPixmap(_ data: UnsafeRawBufferPointer, width: Int, height: Int, depth: UInt8) throws -> RGBImage {
    guard let format = pixmapFormats[depth] else {
      throw XConnectionError.unsupportedImage("no pixmap format for depth \(depth)")
    }
    let bytesPerPixel = format.bitsPerPixel / 8
    guard [2, 3, 4].contains(bytesPerPixel), format.bitsPerPixel % 8 == 0 else {
      throw XConnectionError.unsupportedImage("depth \(depth) with \(format.bitsPerPixel) bits per pixel")
    }
    let stride = (width * format.bitsPerPixel + format.scanlinePad - 1) / format.scanlinePad * format.scanlinePad / 8
    guard data.count >= stride * height else {
      throw XConnectionError.unsupportedImage("\(data.count) bytes for \(width)x\(height), stride \(stride)")
    }
    let channels = [redMask, greenMask, blueMask].map(Channel.init)
    let lsbFirst = imageByteOrderLSBFirst
    var pixels = [UInt8](repeating: 0, count: width * height * 3)
    pixels.withUnsafeMutableBufferPointer { out in
      for y in 0..<height {
        let row = y * stride
        for x in 0..<width {
          let at = row + x * bytesPerPixel
          var value: UInt32 = 0
          for byte in 0..<bytesPerPixel {
            let shift = lsbFirst ? byte * 8 : (bytesPerPixel - 1 - byte) * 8
            value |= UInt32(data[at + byte]) << UInt32(shift)
          }
          let o = (y * width + x) * 3
          out[o] = channels[0].extract(value)
          out[o + 1] = channels[1].extract(value)
          out[o + 2] = channels[2].extract(value)
        }
      }
    }
    return RGBImage(width: width, height: height, pixels: pixels)
  }

  /// The pixel value of an RGB colour in the root visual.
  public func pixel(for color: RGB) -> UInt32 {
    Channel(redMask).insert(color.r) | Channel(greenMask).insert(color.g) | Channel(blueMask).insert(color.b)
  }
}

/// One colour channel of a TrueColor visual, given its mask.
private struct Channel {
  public let shift: UInt32
  public let bits: UInt32
  public let mask: UInt32

  public init(_ mask: UInt32) {
    self.mask = mask
    shift = mask == 0 ? 0 : UInt32(mask.trailingZeroBitCount)
    bits = UInt32(mask.nonzeroBitCount)
  }

  public func extract(_ value: UInt32) -> UInt8 {
    guard bits > 0 else { return 0 }
    let raw = (value & mask) >> shift
    if bits >= 8 { return UInt8(truncatingIfNeeded: raw >> (bits - 8)) }
    let maximum = (UInt32(1) << bits) - 1
    return UInt8((raw * 255 + maximum / 2) / maximum)
  }

  public func insert(_ component: UInt8) -> UInt32 {
    guard bits > 0 else { return 0 }
    let scaled: UInt32 =
      bits >= 8 ? UInt32(component) << (bits - 8) : (UInt32(component) * ((1 << bits) - 1) + 127) / 255
    return (scaled << shift) & mask
  }
}
