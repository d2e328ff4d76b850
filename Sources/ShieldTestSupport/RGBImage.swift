// Decoded captures: a plain 8-bit RGB raster, a binary PPM (P6/P5) reader and writer, and
// pixel counting for "is the secret window visible in this capture?" checks.

import Foundation

/// An 8-bit-per-channel colour.
public struct RGB: Hashable, Sendable, CustomStringConvertible {
  public var r: UInt8
  public var g: UInt8
  public var b: UInt8

  public init(_ r: UInt8, _ g: UInt8, _ b: UInt8) {
    self.r = r
    self.g = g
    self.b = b
  }

  public init(_ tuple: (UInt8, UInt8, UInt8)) { self.init(tuple.0, tuple.1, tuple.2) }

  public var tuple: (UInt8, UInt8, UInt8) { (r, g, b) }

  public static let red = RGB(255, 0, 0)
  public static let green = RGB(0, 255, 0)
  public static let blue = RGB(0, 0, 255)
  public static let black = RGB(0, 0, 0)
  public static let white = RGB(255, 255, 255)

  public var description: String { "(\(r),\(g),\(b))" }

  public func matches(_ other: RGB, tolerance: UInt8) -> Bool {
    func close(_ a: UInt8, _ b: UInt8) -> Bool { (a > b ? a - b : b - a) <= tolerance }
    return close(r, other.r) && close(g, other.g) && close(b, other.b)
  }
}

/// An axis-aligned pixel rectangle.
public struct PixelRect: Hashable, Sendable, CustomStringConvertible {
  public var x: Int
  public var y: Int
  public var width: Int
  public var height: Int

  public init(x: Int, y: Int, width: Int, height: Int) {
    self.x = x
    self.y = y
    self.width = width
    self.height = height
  }

  public var area: Int { max(0, width) * max(0, height) }
  public var maxX: Int { x + width }
  public var maxY: Int { y + height }

  public func intersection(_ other: PixelRect) -> PixelRect {
    let left = max(x, other.x)
    let top = max(y, other.y)
    let right = min(maxX, other.maxX)
    let bottom = min(maxY, other.maxY)
    return PixelRect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
  }

  public func offsetBy(dx: Int, dy: Int) -> PixelRect { PixelRect(x: x + dx, y: y + dy, width: width, height: height) }

  public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

public enum ImageDecodingError: Error, CustomStringConvertible {
  case notPNM(String)
  case truncated(expected: Int, got: Int)
  case unsupported(String)

  public var description: String {
    switch self {
    case .notPNM(let detail): "not a binary PPM/PGM: \(detail)"
    case .truncated(let expected, let got): "PPM data truncated: need \(expected) bytes, have \(got)"
    case .unsupported(let detail): "unsupported PNM: \(detail)"
    }
  }
}

/// An 8-bit RGB image; `pixels` holds width*height*3 bytes, row-major, R G B per pixel.
public struct RGBImage: Sendable, Equatable {
  public let width: Int
  public let height: Int
  public var pixels: [UInt8]

  public init(width: Int, height: Int, pixels: [UInt8]) {
    precondition(pixels.count == width * height * 3, "pixel buffer does not match \(width)x\(height)")
    self.width = width
    self.height = height
    self.pixels = pixels
  }

  public init(width: Int, height: Int, fill: RGB) {
    var pixels = [UInt8](repeating: 0, count: width * height * 3)
    for index in stride(from: 0, to: pixels.count, by: 3) {
      pixels[index] = fill.r
      pixels[index + 1] = fill.g
      pixels[index + 2] = fill.b
    }
    self.init(width: width, height: height, pixels: pixels)
  }

  public var bounds: PixelRect { PixelRect(x: 0, y: 0, width: width, height: height) }

  public subscript(x: Int, y: Int) -> RGB {
    get {
      let at = (y * width + x) * 3
      return RGB(pixels[at], pixels[at + 1], pixels[at + 2])
    }
    set {
      let at = (y * width + x) * 3
      pixels[at] = newValue.r
      pixels[at + 1] = newValue.g
      pixels[at + 2] = newValue.b
    }
  }

  /// Number of pixels within `tolerance` (per channel) of `rgb`, inside `rect` (clipped to the
  /// image; the whole image if nil).
  public func count(of rgb: (UInt8, UInt8, UInt8), tolerance: UInt8 = 0, in rect: PixelRect? = nil) -> Int {
    count(of: RGB(rgb), tolerance: tolerance, in: rect)
  }

  public func count(of color: RGB, tolerance: UInt8 = 0, in rect: PixelRect? = nil) -> Int {
    let area = (rect ?? bounds).intersection(bounds)
    guard area.area > 0 else { return 0 }
    let tolerance = Int(tolerance)
    let (r, g, b) = (Int(color.r), Int(color.g), Int(color.b))
    var total = 0
    pixels.withUnsafeBufferPointer { buffer in
      for y in area.y..<area.maxY {
        var at = (y * width + area.x) * 3
        for _ in 0..<area.width {
          if abs(Int(buffer[at]) - r) <= tolerance && abs(Int(buffer[at + 1]) - g) <= tolerance
            && abs(Int(buffer[at + 2]) - b) <= tolerance
          {
            total += 1
          }
          at += 3
        }
      }
    }
    return total
  }

  /// Smallest rectangle containing every pixel matching `color` (nil if none).
  public func boundingBox(of color: RGB, tolerance: UInt8 = 0) -> PixelRect? {
    var minX = Int.max
    var minY = Int.max
    var maxX = -1
    var maxY = -1
    for y in 0..<height {
      for x in 0..<width where self[x, y].matches(color, tolerance: tolerance) {
        minX = min(minX, x)
        maxX = max(maxX, x)
        minY = min(minY, y)
        maxY = max(maxY, y)
      }
    }
    guard maxX >= 0 else { return nil }
    return PixelRect(x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1)
  }

  /// The most frequent colours in `rect` (whole image if nil), most frequent first. Handy in
  /// failure messages.
  public func dominantColors(in rect: PixelRect? = nil, limit: Int = 5) -> [(color: RGB, count: Int)] {
    let area = (rect ?? bounds).intersection(bounds)
    var histogram: [RGB: Int] = [:]
    for y in area.y..<area.maxY {
      for x in area.x..<area.maxX { histogram[self[x, y], default: 0] += 1 }
    }
    return histogram.sorted { $0.value > $1.value }.prefix(limit).map { ($0.key, $0.value) }
  }

  /// Crops to `rect` (clipped to the image).
  public func cropped(to rect: PixelRect) -> RGBImage {
    let area = rect.intersection(bounds)
    var out = [UInt8]()
    out.reserveCapacity(area.area * 3)
    for y in area.y..<area.maxY {
      let start = (y * width + area.x) * 3
      out += pixels[start..<start + area.width * 3]
    }
    return RGBImage(width: area.width, height: area.height, pixels: out)
  }

  // MARK: PNM

  /// Decodes binary PPM (P6) or PGM (P5), maxval up to 65535, with `#` comments in the header
  /// (ImageMagick writes one, e.g. "#xwdump").
  public static func decodePNM(_ data: Data) throws(ImageDecodingError) -> RGBImage {
    let bytes = [UInt8](data)
    var index = 0

    func skipWhitespaceAndComments() {
      while index < bytes.count {
        if bytes[index] == UInt8(ascii: "#") {
          while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
        } else if [0x20, 0x09, 0x0a, 0x0d, 0x0b, 0x0c].contains(bytes[index]) {
          index += 1
        } else {
          return
        }
      }
    }
    func readNumber(_ what: String) throws(ImageDecodingError) -> Int {
      skipWhitespaceAndComments()
      var value = 0
      var digits = 0
      while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39, digits < 10 {
        value = value * 10 + Int(bytes[index] - 0x30)
        index += 1
        digits += 1
      }
      guard digits > 0 else { throw .notPNM("missing \(what)") }
      return value
    }

    guard bytes.count >= 2, bytes[0] == UInt8(ascii: "P") else {
      throw .notPNM("no P magic (first bytes: \(bytes.prefix(8)))")
    }
    let channels: Int
    switch bytes[1] {
    case UInt8(ascii: "6"): channels = 3
    case UInt8(ascii: "5"): channels = 1
    default: throw .unsupported("magic P\(Character(UnicodeScalar(bytes[1])))")
    }
    index = 2
    let width = try readNumber("width")
    let height = try readNumber("height")
    let maxval = try readNumber("maxval")
    guard width > 0, height > 0, (1...65535).contains(maxval) else {
      throw .notPNM("bad header \(width)x\(height) maxval \(maxval)")
    }
    // Exactly one whitespace byte separates the header from the raster.
    index += 1
    let sampleBytes = maxval > 255 ? 2 : 1
    let needed = width * height * channels * sampleBytes
    guard bytes.count - index >= needed else { throw .truncated(expected: needed, got: bytes.count - index) }

    if channels == 3 && sampleBytes == 1 && maxval == 255 {
      return RGBImage(width: width, height: height, pixels: Array(bytes[index..<index + needed]))
    }
    var pixels = [UInt8](repeating: 0, count: width * height * 3)
    for pixel in 0..<width * height {
      for channel in 0..<3 {
        let sampleIndex = pixel * channels + (channels == 3 ? channel : 0)
        let at = index + sampleIndex * sampleBytes
        let sample = sampleBytes == 2 ? Int(bytes[at]) << 8 | Int(bytes[at + 1]) : Int(bytes[at])
        pixels[pixel * 3 + channel] = UInt8((sample * 255 + maxval / 2) / maxval)
      }
    }
    return RGBImage(width: width, height: height, pixels: pixels)
  }

  public init(pnmFile path: String) throws {
    guard let data = FileManager.default.contents(atPath: path) else {
      throw ImageDecodingError.notPNM("cannot read \(path)")
    }
    self = try RGBImage.decodePNM(data)
  }

  /// Binary PPM (P6, maxval 255) encoding, e.g. to keep a failing capture for inspection.
  public func ppmData() -> Data {
    var data = Data("P6\n\(width) \(height)\n255\n".utf8)
    data.append(contentsOf: pixels)
    return data
  }

  public func writePPM(to path: String) throws {
    try ppmData().write(to: URL(fileURLWithPath: path))
  }
}
