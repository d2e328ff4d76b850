import Foundation

/// A JSON5 value together with the position where it starts in its file.
///
/// Objects keep their members in source order, duplicates included (the policy validator
/// reports duplicates; a plain JSON reader would silently keep one of them).
struct JSONValue: Sendable, Hashable {
  /// What the value is.
  enum Kind: Sendable, Hashable {
    case object([Member])
    case array([JSONValue])
    case string(String)
    /// An integral number (written without fraction or exponent, or with an integral
    /// value small enough to be exact), within `Int`'s range.
    case int(Int)
    /// Any other number, including `Infinity` and `NaN`.
    case double(Double)
    case bool(Bool)
    case null
  }

  /// One `key: value` pair of an object.
  struct Member: Sendable, Hashable {
    var key: String
    var keyLocation: SourceLocation
    var value: JSONValue
  }

  var kind: Kind
  /// Where the value starts: its first scalar (`{`, `[`, the opening quote, the sign or
  /// first digit of a number, ...).
  var location: SourceLocation
  /// For strings written with escapes or line continuations: the source position of each
  /// scalar of the decoded string (nil when the string maps one to one onto the source,
  /// starting one column after the opening quote).
  var scalarLocations: [SourceLocation]? = nil

  /// The position of the scalar at `offset` in a string value (e.g. where a glob goes
  /// wrong). Clamped to the string; for non-strings, the value's own position.
  func location(ofScalarAt offset: Int) -> SourceLocation {
    guard case .string(let s) = kind else { return location }
    let count = s.unicodeScalars.count
    let offset = max(0, min(offset, count))
    if let map = scalarLocations {
      if offset < map.count { return map[offset] }
      guard var last = map.last else { return location }
      last.column += 1
      return last
    }
    var loc = location
    loc.column += 1 + offset
    return loc
  }

  /// The value's type with an article, for messages: `a string`, `an object`, `null`.
  var typeDescription: String {
    switch kind {
    case .object: return "an object"
    case .array: return "an array"
    case .string: return "a string"
    case .int, .double: return "a number"
    case .bool: return "a boolean"
    case .null: return "null"
    }
  }
}

/// A small JSON5 reader that keeps source positions (1-based lines, columns counted in
/// Unicode scalars).
///
/// It accepts the JSON5 that Foundation's JSON5 mode (`JSONDecoder.allowsJSON5`) accepts:
/// `//` and `/* */` comments, trailing commas, unquoted (ECMAScript identifier) keys,
/// single-quoted strings, hexadecimal numbers, leading or trailing decimal points, an
/// explicit `+` sign, `Infinity` and `NaN`, line continuations, and `\x`/`\u` escapes;
/// and a little more of the JSON5 specification (`\v`, `\0`, tabs in strings, Unicode
/// white space). Where Foundation departs from the specification, this follows the
/// specification: a line continuation (backslash, line break) adds nothing to the string
/// (Foundation keeps the line break), and `\u` escapes in unquoted keys are decoded.
/// Unknown escapes such as `\d` are rejected rather than read as `d`, so a regex written
/// with single backslashes fails loudly. Nesting deeper than `maxDepth` is rejected.
enum JSON5 {
  /// The deepest nesting of objects and arrays accepted.
  static let maxDepth = 64

  /// Parses one JSON5 document (a single value, surrounded by white space or comments).
  static func parse(_ text: String, file: String) throws(PolicyDiagnostic) -> JSONValue {
    var scanner = Scanner(text: text, file: file)
    scanner.skipBOM()
    try scanner.skipTrivia()
    guard !scanner.atEnd else {
      throw scanner.error("empty document: expected a value")
    }
    let value = try scanner.parseValue(depth: 0)
    try scanner.skipTrivia()
    if !scanner.atEnd {
      throw scanner.error("unexpected \(scanner.describeCurrent()) after the end of the document")
    }
    return value
  }

  struct Scanner {
    let s: [Unicode.Scalar]
    let file: String
    var i = 0
    var line = 1
    var column = 1

    init(text: String, file: String) {
      self.s = Array(text.unicodeScalars)
      self.file = file
    }

    var atEnd: Bool { i >= s.count }
    var current: Unicode.Scalar? { i < s.count ? s[i] : nil }
    func peek(_ k: Int = 1) -> Unicode.Scalar? { i + k < s.count ? s[i + k] : nil }
    var here: SourceLocation { SourceLocation(file: file, line: line, column: column) }

    func error(_ message: String, at loc: SourceLocation? = nil) -> PolicyDiagnostic {
      PolicyDiagnostic(location: loc ?? here, message: message)
    }

    /// The current scalar for messages: `character 'x'`, `end of input`.
    func describeCurrent() -> String {
      guard let c = current else { return "end of input" }
      return "character \(Self.describe(c))"
    }

    static func describe(_ c: Unicode.Scalar) -> String {
      if Escaping.mustEscape(c) || c.properties.generalCategory == .spaceSeparator {
        return "U+" + String(String(c.value, radix: 16, uppercase: true).leftPadded(to: 4))
      }
      return "'\(c)'"
    }

    /// Moves past one scalar, keeping line and column up to date. `\n`, `\r` and `\r\n`
    /// end a line (what editors show).
    mutating func advance() {
      guard i < s.count else { return }
      let c = s[i]
      i += 1
      if c == "\n" || (c == "\r" && current != "\n") {
        line += 1
        column = 1
      } else {
        column += 1
      }
    }

    mutating func skipBOM() {
      if current == "\u{FEFF}" { i += 1 }  // not counted: editors do not show it
    }

    static func isLineTerminator(_ c: Unicode.Scalar) -> Bool {
      c == "\n" || c == "\r" || c == "\u{2028}" || c == "\u{2029}"
    }

    static func isWhiteSpace(_ c: Unicode.Scalar) -> Bool {
      switch c {
      case " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{A0}", "\u{FEFF}", "\u{2028}", "\u{2029}":
        return true
      default:
        return c.value > 0x7F && c.properties.generalCategory == .spaceSeparator
      }
    }

    /// Skips white space and comments.
    mutating func skipTrivia() throws(PolicyDiagnostic) {
      while let c = current {
        if Self.isWhiteSpace(c) {
          advance()
        } else if c == "/" && peek() == "/" {
          while let d = current, !Self.isLineTerminator(d) { advance() }
        } else if c == "/" && peek() == "*" {
          let start = here
          advance()
          advance()
          var closed = false
          while let d = current {
            if d == "*" && peek() == "/" {
              advance()
              advance()
              closed = true
              break
            }
            advance()
          }
          if !closed { throw error("unterminated comment (opened here)", at: start) }
        } else {
          return
        }
      }
    }

    mutating func parseValue(depth: Int) throws(PolicyDiagnostic) -> JSONValue {
      guard let c = current else { throw error("unexpected end of input: expected a value") }
      switch c {
      case "{": return try parseObject(depth: depth + 1)
      case "[": return try parseArray(depth: depth + 1)
      case "\"", "'":
        return try parseString()
      case "0"..."9", "+", "-", ".":
        return try parseNumber()
      default:
        if Self.isIdentifierStart(c) {
          let start = here
          let word = try parseIdentifier()
          switch word {
          case "true": return JSONValue(kind: .bool(true), location: start)
          case "false": return JSONValue(kind: .bool(false), location: start)
          case "null": return JSONValue(kind: .null, location: start)
          case "Infinity": return JSONValue(kind: .double(.infinity), location: start)
          case "NaN": return JSONValue(kind: .double(.nan), location: start)
          default:
            throw error(
              "unexpected word '\(word)': expected a value (strings must be quoted)", at: start)
          }
        }
        throw error("unexpected \(describeCurrent()): expected a value")
      }
    }

    mutating func checkDepth(_ depth: Int) throws(PolicyDiagnostic) {
      if depth > JSON5.maxDepth {
        throw error("nesting too deep: more than \(JSON5.maxDepth) levels of objects and arrays")
      }
    }

    mutating func parseObject(depth: Int) throws(PolicyDiagnostic) -> JSONValue {
      try checkDepth(depth)
      let start = here
      advance()  // {
      var members: [JSONValue.Member] = []
      while true {
        try skipTrivia()
        guard let c = current else {
          throw error("unterminated object: expected '}' to close the '{' at \(start.line):\(start.column)")
        }
        if c == "}" {
          advance()
          return JSONValue(kind: .object(members), location: start)
        }
        let keyLocation = here
        let key: String
        if c == "\"" || c == "'" {
          key = try scanString().text
        } else if Self.isIdentifierStart(c) || c == "\\" {
          key = try parseIdentifier()
        } else {
          throw error("unexpected \(describeCurrent()): expected a key or '}'")
        }
        try skipTrivia()
        guard current == ":" else {
          throw error("expected ':' after key '\(key)', found \(describeCurrent())")
        }
        advance()
        try skipTrivia()
        let value = try parseValue(depth: depth)
        members.append(JSONValue.Member(key: key, keyLocation: keyLocation, value: value))
        try skipTrivia()
        switch current {
        case ",": advance()
        case "}": continue
        default: throw error("expected ',' or '}' after a value in an object, found \(describeCurrent())")
        }
      }
    }

    mutating func parseArray(depth: Int) throws(PolicyDiagnostic) -> JSONValue {
      try checkDepth(depth)
      let start = here
      advance()  // [
      var items: [JSONValue] = []
      while true {
        try skipTrivia()
        guard let c = current else {
          throw error("unterminated array: expected ']' to close the '[' at \(start.line):\(start.column)")
        }
        if c == "]" {
          advance()
          return JSONValue(kind: .array(items), location: start)
        }
        if c == "," { throw error("unexpected ',': expected a value or ']'") }
        items.append(try parseValue(depth: depth))
        try skipTrivia()
        switch current {
        case ",": advance()
        case "]": continue
        default: throw error("expected ',' or ']' after a value in an array, found \(describeCurrent())")
        }
      }
    }

    static func hexValue(_ c: Unicode.Scalar?) -> UInt32? {
      guard let c else { return nil }
      switch c {
      case "0"..."9": return c.value - 0x30
      case "a"..."f": return c.value - 0x61 + 10
      case "A"..."F": return c.value - 0x41 + 10
      default: return nil
      }
    }

    /// Reads `count` hex digits (after `\x` or `\u`), at `escapeStart` for errors.
    mutating func hexDigits(_ count: Int, escapeStart: SourceLocation, what: String) throws(PolicyDiagnostic) -> UInt32
    {
      var v: UInt32 = 0
      for _ in 0..<count {
        guard let d = Self.hexValue(current) else {
          throw error("bad \(what) escape: expected \(count) hexadecimal digits", at: escapeStart)
        }
        v = v * 16 + d
        advance()
      }
      return v
    }

    /// After `\u`: one UTF-16 unit, or a surrogate pair written as two escapes.
    mutating func unicodeEscape(escapeStart: SourceLocation) throws(PolicyDiagnostic) -> Unicode.Scalar {
      let unit = try hexDigits(4, escapeStart: escapeStart, what: "\\u")
      if (0xD800..<0xDC00).contains(unit) {
        guard current == "\\", peek() == "u" else {
          throw error("lone surrogate \\u\(String(unit, radix: 16, uppercase: true)) in string", at: escapeStart)
        }
        let lowStart = here
        advance()
        advance()
        let low = try hexDigits(4, escapeStart: lowStart, what: "\\u")
        guard (0xDC00..<0xE000).contains(low) else {
          throw error("lone surrogate \\u\(String(unit, radix: 16, uppercase: true)) in string", at: escapeStart)
        }
        return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
      }
      guard let scalar = Unicode.Scalar(unit) else {
        throw error("lone surrogate \\u\(String(unit, radix: 16, uppercase: true)) in string", at: escapeStart)
      }
      return scalar
    }

    mutating func parseString() throws(PolicyDiagnostic) -> JSONValue {
      let start = here
      let (text, map) = try scanString()
      return JSONValue(kind: .string(text), location: start, scalarLocations: map)
    }

    /// Reads a quoted string; also returns the source position of each decoded scalar
    /// when escapes make them differ from "one column each after the quote".
    mutating func scanString() throws(PolicyDiagnostic) -> (text: String, map: [SourceLocation]?) {
      let start = here
      let quote = current!
      advance()
      var out = String.UnicodeScalarView()
      var locations: [SourceLocation] = []
      var mapped = false  // whether `locations` is needed (an escape or continuation seen)
      while true {
        guard let c = current else {
          throw error("unterminated string (opened here)", at: start)
        }
        if c == quote {
          advance()
          break
        }
        let loc = here
        if c == "\n" || c == "\r" {
          throw error("unterminated string: line break inside a string (write \\n)")
        }
        if c.value < 0x20 && c != "\t" {
          throw error("control character \(Self.describe(c)) inside a string: write it as an escape")
        }
        if c != "\\" {
          out.append(c)
          locations.append(loc)
          advance()
          continue
        }
        mapped = true
        advance()
        guard let e = current else { throw error("unterminated string (opened here)", at: start) }
        let decoded: Unicode.Scalar?
        switch e {
        case "\"", "'", "\\", "/": decoded = e
        case "b": decoded = "\u{08}"
        case "f": decoded = "\u{0C}"
        case "n": decoded = "\n"
        case "r": decoded = "\r"
        case "t": decoded = "\t"
        case "v": decoded = "\u{0B}"
        case "0":
          if let d = peek(), ("0"..."9").contains(d) {
            throw error("bad escape '\\0' followed by a digit (octal escapes are not allowed)", at: loc)
          }
          decoded = "\u{0}"
        case "x":
          advance()
          out.append(Unicode.Scalar(UInt8(try hexDigits(2, escapeStart: loc, what: "\\x"))))
          locations.append(loc)
          continue
        case "u":
          advance()
          out.append(try unicodeEscape(escapeStart: loc))
          locations.append(loc)
          continue
        case "\r":
          advance()
          if current == "\n" { advance() }
          decoded = nil  // line continuation
        case "\n", "\u{2028}", "\u{2029}":
          advance()
          decoded = nil
        default:
          throw error(
            "unknown escape '\\\(e)' in string (write '\\\\' for a backslash, e.g. \"/\\\\d+/\" for the regex /\\d+/)",
            at: loc)
        }
        if let decoded {
          advance()
          out.append(decoded)
          locations.append(loc)
        }
      }
      return (String(out), mapped ? locations : nil)
    }

    static func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
      c == "$" || c == "_" || ("a"..."z").contains(c) || ("A"..."Z").contains(c)
        || (c.value > 0x7F && c.properties.isIDStart)
    }

    static func isIdentifierPart(_ c: Unicode.Scalar) -> Bool {
      isIdentifierStart(c) || ("0"..."9").contains(c) || c == "\u{200C}" || c == "\u{200D}"
        || (c.value > 0x7F && c.properties.isIDContinue)
    }

    /// An ECMAScript IdentifierName (unquoted key or literal word), `\uXXXX` escapes
    /// allowed as in JSON5.
    mutating func parseIdentifier() throws(PolicyDiagnostic) -> String {
      var out = String.UnicodeScalarView()
      while let c = current {
        if c == "\\" {
          let loc = here
          advance()
          guard current == "u" else { throw error("bad escape in unquoted key: expected \\u", at: loc) }
          advance()
          let scalar = try unicodeEscape(escapeStart: loc)
          guard out.isEmpty ? Self.isIdentifierStart(scalar) : Self.isIdentifierPart(scalar) else {
            throw error("escape \(Self.describe(scalar)) is not allowed in an unquoted key", at: loc)
          }
          out.append(scalar)
        } else if out.isEmpty ? Self.isIdentifierStart(c) : Self.isIdentifierPart(c) {
          out.append(c)
          advance()
        } else {
          break
        }
      }
      return String(out)
    }

    mutating func parseNumber() throws(PolicyDiagnostic) -> JSONValue {
      let start = here
      var negative = false
      if current == "+" || current == "-" {
        negative = current == "-"
        advance()
      }
      // Infinity / NaN after a sign.
      if let c = current, c == "I" || c == "N" {
        let wordStart = here
        let word = try parseIdentifier()
        switch word {
        case "Infinity": return JSONValue(kind: .double(negative ? -.infinity : .infinity), location: start)
        case "NaN": return JSONValue(kind: .double(negative ? -.nan : .nan), location: start)
        default: throw error("unexpected word '\(word)': expected a number", at: wordStart)
        }
      }
      // Hexadecimal.
      if current == "0", peek() == "x" || peek() == "X" {
        advance()
        advance()
        var magnitude: UInt64 = 0
        var overflow = false
        var digits = 0
        var approx: Double = 0
        while let d = Self.hexValue(current) {
          let (m1, o1) = magnitude.multipliedReportingOverflow(by: 16)
          let (m2, o2) = m1.addingReportingOverflow(UInt64(d))
          overflow = overflow || o1 || o2
          magnitude = m2
          approx = approx * 16 + Double(d)
          digits += 1
          advance()
        }
        guard digits > 0 else { throw error("bad number: expected hexadecimal digits after '0x'", at: start) }
        try checkNumberEnd()
        if !overflow {
          if !negative, magnitude <= UInt64(Int.max) {
            return JSONValue(kind: .int(Int(magnitude)), location: start)
          }
          if negative, magnitude <= UInt64(Int.max) + 1 {
            return JSONValue(kind: .int(magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude)), location: start)
          }
        }
        return JSONValue(kind: .double(negative ? -approx : approx), location: start)
      }
      // Decimal: int? ('.' digits?)? exponent?, with at least one digit before or after '.'.
      var text = negative ? "-" : ""
      var intDigits = 0
      var fracDigits = 0
      var isIntegerLiteral = true
      let intStart = here
      while let c = current, ("0"..."9").contains(c) {
        text.unicodeScalars.append(c)
        intDigits += 1
        advance()
      }
      if intDigits > 1, text.unicodeScalars.first(where: { $0 != "-" }) == "0" {
        throw error("bad number: leading zeros are not allowed", at: intStart)
      }
      if current == "." {
        isIntegerLiteral = false
        text += intDigits == 0 ? "0." : "."
        advance()
        while let c = current, ("0"..."9").contains(c) {
          text.unicodeScalars.append(c)
          fracDigits += 1
          advance()
        }
        if fracDigits == 0 { text += "0" }
      }
      guard intDigits + fracDigits > 0 else {
        throw error("bad number: expected a digit", at: start)
      }
      if current == "e" || current == "E" {
        isIntegerLiteral = false
        text += "e"
        advance()
        if current == "+" || current == "-" {
          text.unicodeScalars.append(current!)
          advance()
        }
        var expDigits = 0
        while let c = current, ("0"..."9").contains(c) {
          text.unicodeScalars.append(c)
          expDigits += 1
          advance()
        }
        guard expDigits > 0 else { throw error("bad number: expected digits in the exponent", at: start) }
      }
      try checkNumberEnd()
      if isIntegerLiteral, let v = Int(text) {
        return JSONValue(kind: .int(v), location: start)
      }
      guard let d = Double(text) else { throw error("bad number", at: start) }
      if d == d.rounded(), abs(d) <= 9_007_199_254_740_992 {
        return JSONValue(kind: .int(Int(d)), location: start)
      }
      return JSONValue(kind: .double(d), location: start)
    }

    /// A number must not run into a letter or digit (`1x`, `0x1g`, `NaN1`).
    func checkNumberEnd() throws(PolicyDiagnostic) {
      if let c = current, Self.isIdentifierPart(c) || c == "." {
        throw error("unexpected \(describeCurrent()) in number")
      }
    }
  }
}

extension String {
  fileprivate func leftPadded(to width: Int) -> String {
    count >= width ? self : String(repeating: "0", count: width - count) + self
  }
}
