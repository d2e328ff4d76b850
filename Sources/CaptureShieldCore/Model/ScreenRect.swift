/// An area in root coordinates (pixels; a window's area includes its border).
public struct ScreenRect: Sendable, Hashable, CustomStringConvertible {
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

  /// Whether the two areas share at least one pixel.
  public func intersects(_ other: ScreenRect) -> Bool {
    width > 0 && height > 0 && other.width > 0 && other.height > 0 && x < other.x + other.width
      && other.x < x + width && y < other.y + other.height && other.y < y + height
  }

  public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

extension ScreenRect {
  /// The smallest area covering both.
  public func union(_ other: ScreenRect) -> ScreenRect {
    let left = Swift.min(x, other.x)
    let top = Swift.min(y, other.y)
    let right = Swift.max(x + width, other.x + other.width)
    let bottom = Swift.max(y + height, other.y + other.height)
    return ScreenRect(x: left, y: top, width: right - left, height: bottom - top)
  }
}
