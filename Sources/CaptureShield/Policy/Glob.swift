import Foundation

/// A shell-style glob over Unicode scalars: `*` (any run, including `/`), `?` (one
/// scalar), `[abc]`, `[a-z]`, `[!a-z]` / `[^a-z]`, and `\x` for a literal `x`.
/// Matching is linear in practice (single-star backtracking), so hostile patterns
/// cannot make it explode.
public struct Glob: Sendable, Hashable {
  enum Token: Sendable, Hashable {
    case literal(Unicode.Scalar)
    case any  // ?
    case star  // *
    case set(negated: Bool, items: [SetItem])
  }
  enum SetItem: Sendable, Hashable {
    case scalar(Unicode.Scalar)
    case range(Unicode.Scalar, Unicode.Scalar)
  }

  /// Why a glob was rejected, with the scalar offset of the problem.
  public struct SyntaxError: Error, Sendable, Hashable {
    public var offset: Int
    public var message: String
  }

  let tokens: [Token]

  /// Whether the pattern has no wildcard at all (then it is compared as a plain string).
  public var isLiteral: Bool {
    tokens.allSatisfy { if case .literal = $0 { return true } else { return false } }
  }

  /// Compiles `pattern`, or nil when it is malformed (see `parse` for the reason).
  public static func compile(_ pattern: String) -> Glob? { try? parse(pattern) }

  /// Compiles `pattern` or throws a `SyntaxError` naming the offending offset.
  public static func parse(_ pattern: String) throws(SyntaxError) -> Glob {
    let s = Array(pattern.unicodeScalars)
    var tokens: [Token] = []
    var i = 0
    while i < s.count {
      let c = s[i]
      switch c {
      case "*":
        if tokens.last != .star { tokens.append(.star) }
        i += 1
      case "?":
        tokens.append(.any)
        i += 1
      case "\\":
        guard i + 1 < s.count else {
          throw SyntaxError(offset: i, message: "trailing backslash in glob")
        }
        tokens.append(.literal(s[i + 1]))
        i += 2
      case "[":
        let open = i
        i += 1
        var negated = false
        if i < s.count, s[i] == "!" || s[i] == "^" {
          negated = true
          i += 1
        }
        var items: [SetItem] = []
        var first = true
        var closed = false
        while i < s.count {
          var c = s[i]
          if c == "]" && !first {
            closed = true
            i += 1
            break
          }
          first = false
          if c == "\\" && i + 1 < s.count {
            i += 1
            c = s[i]
          }
          if i + 2 < s.count, s[i + 1] == "-", s[i + 2] != "]" {
            var hi = s[i + 2]
            var step = 3
            if hi == "\\" && i + 3 < s.count {
              hi = s[i + 3]
              step = 4
            }
            guard c.value <= hi.value else {
              throw SyntaxError(offset: i, message: "reversed range '\(c)-\(hi)' in glob")
            }
            items.append(.range(c, hi))
            i += step
          } else {
            items.append(.scalar(c))
            i += 1
          }
        }
        guard closed else {
          throw SyntaxError(offset: open, message: "unterminated '[' in glob")
        }
        tokens.append(.set(negated: negated, items: items))
      default:
        tokens.append(.literal(c))
        i += 1
      }
    }
    return Glob(tokens: tokens)
  }

  /// Whether the whole of `value` matches.
  public func matches(_ value: String) -> Bool {
    let v = value.unicodeScalars
    var p = 0
    var i = v.startIndex
    var starP = -1
    var starI = v.startIndex
    while i < v.endIndex {
      if p < tokens.count {
        switch tokens[p] {
        case .star:
          starP = p
          starI = i
          p += 1
          continue
        case .any:
          p += 1
          v.formIndex(after: &i)
          continue
        case .literal(let c) where c == v[i]:
          p += 1
          v.formIndex(after: &i)
          continue
        case .set(let negated, let items) where Self.setContains(items, v[i]) != negated:
          p += 1
          v.formIndex(after: &i)
          continue
        default:
          break
        }
      }
      guard starP >= 0 else { return false }
      p = starP + 1
      v.formIndex(after: &starI)
      i = starI
    }
    while p < tokens.count, tokens[p] == .star { p += 1 }
    return p == tokens.count
  }

  static func setContains(_ items: [SetItem], _ c: Unicode.Scalar) -> Bool {
    for item in items {
      switch item {
      case .scalar(let s) where s == c: return true
      case .range(let lo, let hi) where lo.value <= c.value && c.value <= hi.value: return true
      default: continue
      }
    }
    return false
  }
}

/// A regular expression written `/.../` in a policy file. Matches the whole value
/// (anchored), so `/bank/` does not match `mybanking`; write `/.*bank.*/` for that.
public struct RegexPattern: @unchecked Sendable, Hashable {
  // NSRegularExpression is immutable after creation and documented thread-safe.
  public let source: String
  let regex: NSRegularExpression

  public init(_ source: String) throws {
    self.source = source
    _ = try NSRegularExpression(pattern: source, options: [])  // validate the body on its own
    // Anchored to the whole value: `\A(?:...)\z`, so alternations and lazy quantifiers
    // are tried until one covers everything.
    self.regex = try NSRegularExpression(pattern: "\\A(?:" + source + ")\\z", options: [])
  }

  public func matches(_ value: String) -> Bool {
    let range = NSRange(value.startIndex..<value.endIndex, in: value)
    return regex.firstMatch(in: value, options: [], range: range) != nil
  }

  public static func == (a: Self, b: Self) -> Bool { a.source == b.source }
  public func hash(into h: inout Hasher) { h.combine(source) }
}

extension Pattern {
  /// A pattern from a policy string: `/re/` is a regex, anything else a glob.
  public static func parse(_ text: String) throws -> Pattern {
    if text.count >= 2, text.hasPrefix("/"), text.hasSuffix("/") {
      let body = String(text.dropFirst().dropLast())
      return Pattern(source: text, compiled: .regex(try RegexPattern(body)))
    }
    let g = try Glob.parse(text)
    guard g.isLiteral else { return Pattern(source: text, compiled: .glob(g)) }
    var literal = String.UnicodeScalarView()
    for case .literal(let c) in g.tokens { literal.append(c) }
    return Pattern(source: text, compiled: .literal(String(literal)))
  }
}
