import CaptureShield

/// Parsers for argument values. Each throws a `UsageError` naming the bad value.
enum Values {
  /// A window id: decimal (`18874372`) or hex with `0x` (`0x1200004`); non-zero and
  /// within 32 bits.
  static func windowID(_ text: String) throws(UsageError) -> WindowID {
    let shown = Text.show(text)
    let digits: Substring
    let radix: Int
    if text.hasPrefix("0x") || text.hasPrefix("0X") {
      digits = text.dropFirst(2)
      radix = 16
    } else {
      digits = Substring(text)
      radix = 10
    }
    let valid = !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isHexDigit && (radix == 16 || $0.isNumber) }
    guard valid else {
      throw UsageError("invalid window id '\(shown)': expected a decimal number or 0x followed by hex digits")
    }
    guard let value = UInt32(digits, radix: radix) else {
      throw UsageError("invalid window id '\(shown)': out of range (the largest is 0xffffffff)")
    }
    guard value != 0 else { throw UsageError("invalid window id '\(shown)': must not be zero") }
    return value
  }

  /// A duration such as `30s`, `5m`, `1.5h`, `250ms`; must be more than zero.
  static func duration(_ text: String, option: String) throws(UsageError) -> PolicyDuration {
    guard let d = PolicyDuration(parsing: text) else {
      throw UsageError(
        "invalid duration '\(Text.show(text))' for '\(option)': expected a number followed by ms, s, m or h (e.g. 30s, 5m)"
      )
    }
    guard d.nanoseconds > 0 else {
      throw UsageError("invalid duration '\(Text.show(text))' for '\(option)': must be more than zero")
    }
    return d
  }

  /// One of `choices`.
  static func choice(_ text: String, option: String, _ choices: [String]) throws(UsageError) -> String {
    guard choices.contains(text) else {
      throw UsageError(
        "invalid value '\(Text.show(text))' for '\(option)': expected \(choices.joined(separator: " or "))")
    }
    return text
  }

  /// `RRGGBB` or `#RRGGBB`.
  static func color(_ text: String) throws(UsageError) -> UInt32 {
    let hex = text.hasPrefix("#") ? text.dropFirst() : Substring(text)
    guard hex.count == 6, hex.allSatisfy({ $0.isASCII && $0.isHexDigit }), let v = UInt32(hex, radix: 16) else {
      throw UsageError("invalid colour '\(Text.show(text))' for '--color': expected RRGGBB hex, e.g. ff0000")
    }
    return v
  }

  /// `WxH` or `WxH+X+Y`.
  static func geometry(_ text: String) throws(UsageError) -> (width: Int, height: Int, x: Int?, y: Int?) {
    let bad = UsageError(
      "invalid geometry '\(Text.show(text))' for '--geometry': expected WxH or WxH+X+Y, e.g. 320x200+100+100")
    let plus = text.split(separator: "+", omittingEmptySubsequences: false)
    guard plus.count == 1 || plus.count == 3 else { throw bad }
    let size = plus[0].split(separator: "x", omittingEmptySubsequences: false)
    guard size.count == 2 else { throw bad }
    func number(_ s: Substring, _ range: ClosedRange<Int>) throws(UsageError) -> Int {
      guard !s.isEmpty, s.count <= 6, s.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(s), range.contains(n)
      else { throw bad }
      return n
    }
    let width = try number(size[0], 1...32767)
    let height = try number(size[1], 1...32767)
    guard plus.count == 3 else { return (width, height, nil, nil) }
    return (width, height, try number(plus[1], 0...32767), try number(plus[2], 0...32767))
  }
}

/// Text helpers for output.
enum Text {
  /// `0x1200004`.
  static func hex(_ id: UInt32) -> String { "0x" + String(id, radix: 16) }

  /// A string from the user or from another program (a window title, say) made safe to
  /// print on one terminal line: control, line-break, bidirectional and invisible format
  /// characters are escaped, and it is cut after `limit` characters (`Escaping.show`).
  static func show(_ s: String, limit: Int = 200) -> String {
    Escaping.show(s, limit: limit)
  }

  /// `"value"` (escaped like `show`), or `-` when unknown.
  static func quoted(_ s: String?, limit: Int = 200) -> String {
    guard let s else { return "-" }
    return "\"" + show(s, limit: limit).replacingOccurrences(of: "\"", with: "\\\"") + "\""
  }

  /// `1 rule`, `2 rules`.
  static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
    "\(n) " + (n == 1 ? singular : plural ?? singular + "s")
  }

  /// `4.2s`, `3m 05s`, `2h 03m`, `1d 02h`.
  static func duration(seconds: Double) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "-" }
    if seconds < 60 {
      let tenths = Int((seconds * 10).rounded())
      return tenths % 10 == 0 ? "\(tenths / 10)s" : "\(tenths / 10).\(tenths % 10)s"
    }
    let s = Int(seconds)
    func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    if s < 3600 { return "\(s / 60)m \(two(s % 60))s" }
    if s < 86400 { return "\(s / 3600)h \(two(s % 3600 / 60))m" }
    return "\(s / 86400)d \(two(s % 86400 / 3600))h"
  }

  /// Left-aligned columns separated by two spaces; the last column is not padded.
  static func table(_ header: [String], _ rows: [[String]]) -> String {
    let all = [header] + rows
    var widths = [Int](repeating: 0, count: header.count)
    for row in all {
      for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
    }
    return all.map { row in
      var line = ""
      for (i, cell) in row.enumerated() {
        if i == row.count - 1 {
          line += cell
        } else {
          line += cell + String(repeating: " ", count: widths[i] - cell.count + 2)
        }
      }
      return line
    }.joined(separator: "\n")
  }
}
