/// Pure decoders for X property values (hostile input: any length, any bytes).
public enum PropertyDecoding {
  /// The longest text kept from a property (titles can be megabytes long).
  public static let maxTextScalars = 4096

  /// Decodes text: UTF-8 (invalid sequences become U+FFFD) or Latin-1 (STRING).
  /// NULs end the text; the result is capped at `maxTextScalars`.
  public static func text(_ bytes: [UInt8], utf8: Bool) -> String {
    let cut = bytes.firstIndex(of: 0).map { Array(bytes[..<$0]) } ?? bytes
    var s: String
    if utf8 {
      s = String(decoding: cut, as: UTF8.self)
    } else {
      var v = String.UnicodeScalarView()
      for b in cut { v.append(Unicode.Scalar(b)) }
      s = String(v)
    }
    if s.unicodeScalars.count > maxTextScalars {
      s = String(String.UnicodeScalarView(s.unicodeScalars.prefix(maxTextScalars)))
    }
    return s
  }

  /// WM_CLASS: `instance\0class\0` (Latin-1). Missing parts are nil.
  public static func wmClass(_ bytes: [UInt8]) -> (instance: String?, class: String?) {
    let parts = bytes.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
    func part(_ i: Int) -> String? {
      guard i < parts.count, !parts[i].isEmpty else { return nil }
      return text(Array(parts[i]), utf8: false)
    }
    return (part(0), part(1))
  }

  /// A CARDINAL/32 property's first value (e.g. `_NET_WM_PID`), little-endian as xcb
  /// delivers it on this host; nil when the shape is wrong.
  public static func cardinal(format: UInt8, bytes: [UInt8]) -> UInt32? {
    guard format == 32, bytes.count >= 4 else { return nil }
    return UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
  }
}
