// Secure views (PROTOCOL.md section 1): rectangles of a window that must stay out of
// captures while the rest of the window stays visible. The app names them in
// `_CAPTURE_SHIELD_VIEWS`, the daemon in `_CAPTURE_SHIELD_POLICY_VIEWS`: CARDINAL/32, 4n items
// x, y, width, height in window coordinates.

/// One secure view: a rectangle in the window's coordinates.
public struct ViewRect: Sendable, Hashable, Codable, CustomStringConvertible {
  public var x: Int32
  public var y: Int32
  public var width: UInt32
  public var height: UInt32

  public init(x: Int32, y: Int32, width: UInt32, height: UInt32) {
    self.x = x
    self.y = y
    self.width = width
    self.height = height
  }

  public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

/// The value of a view property, decoded, or of both together (`merged`).
public enum ViewState: Sendable, Hashable, Codable {
  /// Absent, or empty: no views.
  case none
  /// The rectangles, in the property's order.
  case rects([ViewRect])
  /// Another type or format, or a length that is not a multiple of 4 items: the whole
  /// window is secure (fail safe).
  case malformed

  /// Decodes a property reply (`isCardinal`: the type is CARDINAL).
  public static func decode(isCardinal: Bool, format: UInt8, bytes: [UInt8]) -> ViewState {
    if !isCardinal && format == 0 && bytes.isEmpty { return .none }
    guard isCardinal, format == 32, bytes.count % 16 == 0 else { return .malformed }
    if bytes.isEmpty { return .none }
    func item(_ i: Int) -> UInt32 {
      UInt32(bytes[4 * i]) | UInt32(bytes[4 * i + 1]) << 8 | UInt32(bytes[4 * i + 2]) << 16
        | UInt32(bytes[4 * i + 3]) << 24
    }
    return .rects(
      stride(from: 0, to: bytes.count / 4, by: 4).map { i in
        ViewRect(
          x: Int32(bitPattern: item(i)), y: Int32(bitPattern: item(i + 1)), width: item(i + 2), height: item(i + 3))
      })
  }

  /// The two properties together: a malformed one makes the whole window secure, the
  /// rectangles of both count.
  public func merged(_ other: ViewState) -> ViewState {
    switch (self, other) {
    case (.malformed, _), (_, .malformed): return .malformed
    case (.none, let o): return o
    case (let s, .none): return s
    case (.rects(let a), .rects(let b)): return .rects(a + b)
    }
  }

  /// The rectangles (none when absent or malformed).
  public var rects: [ViewRect] {
    if case .rects(let r) = self { return r }
    return []
  }
}

extension WindowInfo {
  /// Why the window's views make it secure: its rectangles, or the whole window when a view
  /// property is malformed; nil when it declares none.
  public var viewReason: SecureReason? {
    switch appViews.merged(policyViews) {
    case .none: return nil
    case .malformed: return .malformedViews
    case .rects(let r):
      let by = [appViews.rects.isEmpty ? nil : "app", policyViews.rects.isEmpty ? nil : "daemon"]
      return .views(r, by: by.compactMap { $0 }.joined(separator: "+"))
    }
  }
}
