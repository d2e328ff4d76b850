import Foundation

/// RFC 5424 formatting of audit records (pure; see `format`).
public enum Syslog5424 {
  /// Our private enterprise number for the structured-data ID (`captureshield@32473`;
  /// 32473 is the number RFC 5612 reserves for documentation examples).
  public static let structuredDataID = "captureshield@32473"
  /// Facility `daemon` (3).
  public static let facility = 3
  /// The longest parameter value written, in Unicode scalars (the datagram stays small).
  public static let maxValueScalars = 1024

  /// This host's name (`gethostname`), or nil.
  static let hostname: String? = {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }()

  /// The severity of a record: `error` 3 (err), tampering and rejected policies 4
  /// (warning), `info` 6, any other audit event 5 (notice).
  public static func severity(of event: String) -> Int {
    switch event {
    case "error": 3
    case "warning", "shield-tampered", "policy-rejected", "bypass-attempt", "allow-refused", "forged-event": 4
    case "info": 6
    default: 5
    }
  }

  /// `<PRI>1 TIMESTAMP HOSTNAME captureshield PID MSGID [captureshield@32473 key="value" ...] MSG`.
  /// MSGID is the event name; every field becomes an SD-PARAM (`"`, `\` and `]` escaped,
  /// control and line-break characters written as `\u{XXXX}`); MSG is the `message` field
  /// for `info`/`error`/`warning` records, otherwise `event=NAME`. The result never
  /// contains a line break.
  public static func format(_ record: AuditRecord, time: Date, hostname: String?, pid: Int) -> String {
    let pri = facility * 8 + severity(of: record.event)
    var s = "<\(pri)>1 \(timestamp(time)) \(header(hostname, max: 255)) captureshield \(pid) "
    s += header(record.event, max: 32)
    var params = ""
    var message: String?
    for f in record.fields {
      let name = paramName(f.key)
      guard !name.isEmpty else { continue }
      params += " \(name)=\"\(paramValue(f.value.description))\""
      if f.key == "message", ["info", "error", "warning"].contains(record.event) { message = f.value.description }
    }
    s += params.isEmpty ? " -" : " [\(structuredDataID)\(params)]"
    // MSG: UTF-8 with the BOM RFC 5424 asks for.
    s += " \u{FEFF}" + escapeControls(message ?? "event=\(record.event)", escapeSD: false)
    return s
  }

  /// RFC 3339 UTC with milliseconds: `2024-05-01T12:00:00.123Z`.
  static func timestamp(_ time: Date) -> String {
    time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
  }

  /// A header field: printable US-ASCII (33...126) only, at most `max` characters; `-`
  /// when empty or absent.
  static func header(_ value: String?, max: Int) -> String {
    guard let value else { return "-" }
    let kept = value.unicodeScalars.filter { $0.value >= 33 && $0.value <= 126 }.prefix(max)
    return kept.isEmpty ? "-" : String(String.UnicodeScalarView(kept))
  }

  /// An SD-NAME: printable US-ASCII except `=`, space, `]` and `"`, at most 32 characters.
  static func paramName(_ key: String) -> String {
    let kept = key.unicodeScalars.filter {
      $0.value >= 33 && $0.value <= 126 && $0 != "=" && $0 != "]" && $0 != "\""
    }.prefix(32)
    return String(String.UnicodeScalarView(kept))
  }

  /// A PARAM-VALUE: `"`, `\` and `]` escaped with a backslash, controls written out.
  /// (Controls: every scalar `Escaping.mustEscape` names, bidirectional and invisible
  /// format characters included, as `\u{XXXX}`.)
  public static func paramValue(_ value: String) -> String {
    var v = value
    if v.unicodeScalars.count > maxValueScalars {
      v = String(String.UnicodeScalarView(v.unicodeScalars.prefix(maxValueScalars))) + "…"
    }
    return escapeControls(v, escapeSD: true)
  }

  static func escapeControls(_ value: String, escapeSD: Bool) -> String {
    var out = String.UnicodeScalarView()
    for c in value.unicodeScalars {
      if escapeSD, c == "\"" || c == "\\" || c == "]" {
        out.append("\\")
        out.append(c)
      } else if Escaping.mustEscape(c) {
        out.append(contentsOf: "\\u{\(String(c.value, radix: 16, uppercase: true))}".unicodeScalars)
      } else {
        out.append(c)
      }
    }
    return String(out)
  }
}
