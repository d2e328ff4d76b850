import Foundation

/// One structured audit line: an event name and ordered fields. Never holds secrets
/// (no clipboard text, no pixel data).
public struct AuditRecord: Sendable, Hashable {
  /// A field value; numbers stay numbers in JSON output.
  public enum Value: Sendable, Hashable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
  }

  /// e.g. `shield`, `unshield`, `session-start`, `session-end`, `capture-request`.
  public var event: String
  public var fields: [(key: String, value: Value)]

  public init(_ event: String, _ fields: [(String, Value)] = []) {
    self.event = event
    self.fields = fields.map { (key: $0.0, value: $0.1) }
  }

  /// The value of `key`, if present.
  public subscript(key: String) -> Value? { fields.first { $0.key == key }?.value }

  public static func == (a: Self, b: Self) -> Bool {
    a.event == b.event && a.fields.count == b.fields.count
      && zip(a.fields, b.fields).allSatisfy { $0.key == $1.key && $0.value == $1.value }
  }
  public func hash(into h: inout Hasher) {
    h.combine(event)
    for f in fields {
      h.combine(f.key)
      h.combine(f.value)
    }
  }
}

extension AuditRecord.Value: CustomStringConvertible, ExpressibleByStringLiteral,
  ExpressibleByIntegerLiteral
{
  public init(stringLiteral s: String) { self = .string(s) }
  public init(integerLiteral i: Int) { self = .int(i) }
  public var description: String {
    switch self {
    case .string(let s): return s
    case .int(let i): return String(i)
    case .double(let d): return Self.fixed3(d)
    case .bool(let b): return b ? "true" : "false"
    }
  }

  /// `d` with three decimals, as `String(format: "%.3f", d)` writes it, without Foundation's
  /// locale-aware formatter (audit lines are written for every client that connects).
  /// Values outside ±1e12, and halfway cases the scaled value cannot settle exactly, go to
  /// `String(format:)`.
  static func fixed3(_ d: Double) -> String {
    guard d.isFinite, abs(d) < 1e12 else { return String(format: "%.3f", d) }
    let scaled = abs(d) * 1000
    let frac = scaled - scaled.rounded(.down)
    // Near .5 the product's own rounding error can decide the direction: ask printf.
    if abs(frac - 0.5) < 1e-6 { return String(format: "%.3f", d) }
    let n = Int64(scaled.rounded(.toNearestOrAwayFromZero))
    let whole = n / 1000
    let milli = Int(n % 1000)
    let digits = milli < 10 ? "00\(milli)" : milli < 100 ? "0\(milli)" : "\(milli)"
    return (d.sign == .minus ? "-" : "") + "\(whole).\(digits)"
  }
}

/// How audit records are written.
public enum AuditFormat: String, Sendable, CaseIterable {
  /// `captureshield: event=shield window=0x1200004 reason="tag"`
  case text
  /// One JSON object per line.
  case json

  /// Formats `record` with a wall-clock timestamp (ISO 8601, UTC).
  public func format(_ record: AuditRecord, time: Date) -> String {
    let ts = Self.timestamp(time)
    switch self {
    case .text:
      var s = "\(ts) captureshield event=\(record.event)"
      for f in record.fields {
        s += " \(f.key)="
        switch f.value {
        case .string(let v): s += Self.quoteIfNeeded(v)
        default: s += f.value.description
        }
      }
      return s
    case .json:
      var s = "{\"time\":\(Self.jsonString(ts)),\"event\":\(Self.jsonString(record.event))"
      for f in record.fields {
        s += ",\(Self.jsonString(f.key)):"
        switch f.value {
        case .string(let v): s += Self.jsonString(v)
        case .int(let i): s += String(i)
        case .double(let d): s += d.isFinite ? String(d) : "null"
        case .bool(let b): s += b ? "true" : "false"
        }
      }
      return s + "}"
    }
  }

  /// `2026-12-02T20:45:31.105Z`: ISO 8601 in UTC with milliseconds, as
  /// `Date.ISO8601FormatStyle(includingFractionalSeconds: true)` writes it, computed directly
  /// (that formatter was the most expensive step of writing an audit line).
  public static func timestamp(_ date: Date) -> String {
    let t = date.timeIntervalSince1970
    var seconds = Int64(t.rounded(.down))
    var ms = Int((t - Double(seconds)) * 1000)
    if ms >= 1000 {
      seconds += 1
      ms -= 1000
    }
    var days = seconds / 86400
    var rem = seconds % 86400
    if rem < 0 {
      rem += 86400
      days -= 1
    }
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    func pad(_ v: Int64, _ width: Int) -> String {
      let s = String(v)
      return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
    return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rem / 3600, 2)):\(pad(rem / 60 % 60, 2)):"
      + "\(pad(rem % 60, 2)).\(pad(Int64(ms), 3))Z"
  }

  static func quoteIfNeeded(_ v: String) -> String {
    let plain =
      !v.isEmpty
      && v.unicodeScalars.allSatisfy { c in
        c.value > 0x20 && c.value < 0x7f && c != "\"" && c != "\\" && c != "="
      }
    return plain ? v : jsonString(v)
  }

  /// A JSON string literal; control, line-break, bidirectional and invisible format
  /// characters (`Escaping.mustEscape`) are escaped as `\uXXXX` so a hostile window title
  /// can neither forge log lines nor reorder one on a terminal.
  public static func jsonString(_ v: String) -> String {
    var s = "\""
    for c in v.unicodeScalars {
      switch c {
      case "\"": s += "\\\""
      case "\\": s += "\\\\"
      case "\n": s += "\\n"
      case "\r": s += "\\r"
      case "\t": s += "\\t"
      default:
        if Escaping.mustEscape(c) {
          s += String(format: "\\u%04x", c.value)
        } else {
          s.unicodeScalars.append(c)
        }
      }
    }
    return s + "\""
  }
}
