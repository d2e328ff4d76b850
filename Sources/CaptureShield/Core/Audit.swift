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
    case .double(let d): return String(format: "%.3f", d)
    case .bool(let b): return b ? "true" : "false"
    }
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
    let ts = time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
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

  static func quoteIfNeeded(_ v: String) -> String {
    let plain =
      !v.isEmpty
      && v.unicodeScalars.allSatisfy { c in
        c.value > 0x20 && c.value < 0x7f && c != "\"" && c != "\\" && c != "="
      }
    return plain ? v : jsonString(v)
  }

  /// A JSON string literal; control characters and non-ASCII are escaped so a hostile
  /// window title cannot forge log lines.
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
        if c.value < 0x20 || c.value == 0x7f || (c.value >= 0x80 && c.value < 0xa0)
          || c.value == 0x2028 || c.value == 0x2029
        {
          s += String(format: "\\u%04x", c.value)
        } else {
          s.unicodeScalars.append(c)
        }
      }
    }
    return s + "\""
  }
}
