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
///
/// NSRegularExpression (ICU) backtracks and has no time limit on Linux, so the cost of a
/// match is bounded twice: `init` refuses the pattern shapes that backtrack
/// exponentially (see `RegexSafety`), and `matches` looks at no more than
/// `maxMatchScalars` of the value.
public struct RegexPattern: @unchecked Sendable, Hashable {
  /// The longest value a regex is matched against, in Unicode scalars; longer values are
  /// cut (window titles are already cut to the same length when decoded).
  public static let maxMatchScalars = 4096

  // NSRegularExpression is immutable after creation and documented thread-safe.
  public let source: String
  let regex: NSRegularExpression

  /// Compiles `source`. Throws `RegexSafety.Rejection` for a pattern that could take
  /// exponential time (its description is the diagnostic), or NSRegularExpression's
  /// error for one that does not compile.
  public init(_ source: String) throws {
    self.source = source
    _ = try NSRegularExpression(pattern: source, options: [])  // validate the body on its own
    try RegexSafety.check(source)
    // Anchored to the whole value: `\A(?:...)\z`, so alternations and lazy quantifiers
    // are tried until one covers everything.
    self.regex = try NSRegularExpression(pattern: "\\A(?:" + source + ")\\z", options: [])
  }

  public func matches(_ value: String) -> Bool {
    var value = value
    if value.utf8.count > Self.maxMatchScalars, value.unicodeScalars.count > Self.maxMatchScalars {
      value = String(String.UnicodeScalarView(value.unicodeScalars.prefix(Self.maxMatchScalars)))
    }
    let range = NSRange(value.startIndex..<value.endIndex, in: value)
    return regex.firstMatch(in: value, options: [], range: range) != nil
  }

  public static func == (a: Self, b: Self) -> Bool { a.source == b.source }
  public func hash(into h: inout Hasher) { h.combine(source) }
}

/// A conservative static check against catastrophic backtracking in policy regexes.
///
/// Refused, with a message saying why:
/// - a repeated group (`*`, `+`, `{n,}`, `{n,m}` with m > 1) that itself contains an
///   element repeated a variable number of times: `(a+)+`, `(a*)*`, `(aa?)+`, `(a+){3}`;
/// - a repeated group with alternatives that do not each start with a distinct literal
///   character, so two of them may match the same text: `(a|a)*`, `(a|ab)+`, `(\w|\d)*`;
/// - backreferences (`\1`, `\k<name>`), whose matching is NP-hard;
/// - more than `maxRepetitionsInSequence` repetitions one after another (`a*a*a*b`,
///   `.*a.*a.*b`: polynomial of that degree, seconds for a 4096-scalar value). The
///   alternatives of `|` count separately.
/// Well-behaved patterns (`/.*bank.*/`, `/KeePassXC|Bitwarden/`, `/(foo|bar)+/`,
/// `/[a-z]+-[0-9]{1,4}/`) pass.
public enum RegexSafety {
  /// The most repetitions a single path through the pattern may have.
  public static let maxRepetitionsInSequence = 2

  /// Why a pattern was refused. Its description is the diagnostic text.
  public struct Rejection: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    public var message: String
    public var description: String { message }
    public var errorDescription: String? { message }
    public var failureReason: String? { message }
  }

  /// One alternative's first element: a literal scalar, or nil when it can start with
  /// more than one character (a class, an escape, a group, an optional element, nothing).
  private struct Frame {
    /// Whether the group contains an element repeated a variable number of times.
    var variable = false
    var alternatives: [Unicode.Scalar?] = []
    var current: Unicode.Scalar?? = .none  // .none: nothing yet in this alternative
    var sequenceRepeats = 0
    var maxSequenceRepeats = 0
    var caseInsensitive = false

    mutating func atom(_ first: Unicode.Scalar?) {
      if current == nil { current = .some(first) }
    }
    mutating func endAlternative() {
      alternatives.append(current ?? nil)
      current = .none
      maxSequenceRepeats = max(maxSequenceRepeats, sequenceRepeats)
      sequenceRepeats = 0
    }
  }

  private enum Atom {
    case none
    case plain(first: Unicode.Scalar?)
    case group(Frame)
  }

  public static func check(_ pattern: String) throws(Rejection) {
    let s = Array(pattern.unicodeScalars)
    var stack: [Frame] = [Frame()]
    var last = Atom.none
    var lastWasFirstOfAlternative = false
    var i = 0

    func reject(_ why: String) -> Rejection {
      Rejection(
        message: why
          + " (such patterns can take exponential time; rewrite it without nested or ambiguous repetition)")
    }

    /// A quantifier at s[i...]: (length, min, max or nil when unbounded), or nil.
    func quantifier(at i: Int) -> (length: Int, min: Int, max: Int?)? {
      guard i < s.count else { return nil }
      var q: (Int, Int, Int?)
      switch s[i] {
      case "*": q = (1, 0, nil)
      case "+": q = (1, 1, nil)
      case "?": q = (1, 0, 1)
      case "{":
        var j = i + 1
        var lo = 0
        var digits = 0
        while j < s.count, ("0"..."9").contains(s[j]) {
          lo = min(lo * 10 + Int(s[j].value - 48), 1_000_000)
          digits += 1
          j += 1
        }
        guard digits > 0, j < s.count else { return nil }
        if s[j] == "}" {
          q = (j - i + 1, lo, lo)
        } else if s[j] == "," {
          j += 1
          var hi = 0
          var hiDigits = 0
          while j < s.count, ("0"..."9").contains(s[j]) {
            hi = min(hi * 10 + Int(s[j].value - 48), 1_000_000)
            hiDigits += 1
            j += 1
          }
          guard j < s.count, s[j] == "}" else { return nil }
          q = (j - i + 1, lo, hiDigits == 0 ? nil : hi)
        } else {
          return nil
        }
      default: return nil
      }
      // Lazy (`?`) or possessive (`+`) suffix.
      if q.0 + i < s.count, s[q.0 + i] == "?" || s[q.0 + i] == "+" { q.0 += 1 }
      return q
    }

    func applyQuantifier(_ q: (length: Int, min: Int, max: Int?)) throws(Rejection) {
      let repeating = q.max.map { $0 > 1 } ?? true
      let variable = q.max != q.min
      var top = stack[stack.count - 1]
      if lastWasFirstOfAlternative, q.min == 0 || repeating {
        // `a?b|b`, `a+|ab`: the first character no longer decides the alternative.
        top.current = .some(nil)
      }
      if repeating {
        if case .group(let g) = last {
          if g.variable {
            throw reject("nested repetition: a repeated group contains a repeated or optional element")
          }
          let firsts = g.alternatives
          if firsts.count > 1 {
            let keys = firsts.map { $0.map { g.caseInsensitive ? Character($0).lowercased() : String($0) } }
            if keys.contains(where: { $0 == nil }) || Set(keys.compactMap { $0 }).count != keys.count {
              throw reject(
                "ambiguous repetition: the alternatives of a repeated group can match the same text")
            }
          }
        }
        top.sequenceRepeats += 1
        if top.sequenceRepeats > maxRepetitionsInSequence {
          stack[stack.count - 1] = top
          throw reject("more than \(maxRepetitionsInSequence) repetitions in a row")
        }
      }
      if variable { top.variable = true }
      stack[stack.count - 1] = top
      last = .none
      lastWasFirstOfAlternative = false
    }

    func push(_ atom: Atom, first: Unicode.Scalar?) {
      let wasEmpty = stack[stack.count - 1].current == nil
      stack[stack.count - 1].atom(first)
      last = atom
      lastWasFirstOfAlternative = wasEmpty
    }

    while i < s.count {
      let c = s[i]
      if let q = quantifier(at: i) {
        if case .none = last {
          i += q.length  // ICU has rejected a dangling quantifier already; be lenient
          continue
        }
        try applyQuantifier(q)
        i += q.length
        continue
      }
      switch c {
      case "\\":
        guard i + 1 < s.count else {
          i += 1
          continue
        }
        let e = s[i + 1]
        if ("1"..."9").contains(e) || e == "k" {
          throw Rejection(message: "backreferences are not supported (their matching can take exponential time)")
        }
        if e == "Q" {
          // \Q...\E: literal text.
          var j = i + 2
          var first: Unicode.Scalar?
          var count = 0
          while j < s.count, !(s[j] == "\\" && j + 1 < s.count && s[j + 1] == "E") {
            if first == nil { first = s[j] }
            count += 1
            j += 1
          }
          push(.plain(first: count == 1 ? first : nil), first: first)
          // `\Qab\E+` repeats only `b`, but the alternative still starts with `a`.
          if count > 1 { last = .plain(first: nil) }
          i = min(s.count, j + 2)
          continue
        }
        var j = i + 2
        if ["x", "p", "P", "N"].contains(e), j < s.count, s[j] == "{" {
          while j < s.count, s[j] != "}" { j += 1 }
          j += 1
        } else if e == "x" {
          j += 2
        } else if e == "u" {
          j += 4
        } else if e == "U" {
          j += 8
        } else if e == "0" {
          while j < s.count, j < i + 5, ("0"..."7").contains(s[j]) { j += 1 }
        }
        let literalEscapes: Set<Unicode.Scalar> = [
          ".", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "\\", "/", "^", "$", "-", " ",
        ]
        push(.plain(first: nil), first: literalEscapes.contains(e) ? e : nil)
        i = min(s.count, j)
      case "[":
        var depth = 0
        var j = i
        while j < s.count {
          if s[j] == "\\" {
            j += 2
            continue
          }
          if s[j] == "[" {
            depth += 1
          } else if s[j] == "]", j > i + 1, !(j == i + 2 && s[i + 1] == "^") {
            depth -= 1
            if depth == 0 { break }
          }
          j += 1
        }
        push(.plain(first: nil), first: nil)
        i = j + 1
      case "(":
        var j = i + 1
        var frame = Frame()
        frame.caseInsensitive = stack[stack.count - 1].caseInsensitive
        if j < s.count, s[j] == "?" {
          j += 1
          if j < s.count, s[j] == "#" {
            while j < s.count, s[j] != ")" { j += 1 }
            i = j + 1
            continue
          }
          if j < s.count, s[j] == "<", j + 1 < s.count, s[j + 1] != "=", s[j + 1] != "!" {
            while j < s.count, s[j] != ">" { j += 1 }
            j += 1
          } else if j < s.count, ":=!>".unicodeScalars.contains(s[j]) {
            j += 1
          } else if j < s.count, s[j] == "<" {
            j += 2
          } else {
            // Flags: (?i) (?-i) (?i:...) (?x) ...
            var on = true
            var flags: [(Unicode.Scalar, Bool)] = []
            while j < s.count, s[j] != ")", s[j] != ":" {
              if s[j] == "-" { on = false } else { flags.append((s[j], on)) }
              j += 1
            }
            let insensitive = flags.last { $0.0 == "i" }.map(\.1)
            if j < s.count, s[j] == ")" {
              // Applies to the rest of the enclosing group.
              if let insensitive { stack[stack.count - 1].caseInsensitive = insensitive }
              if flags.contains(where: { $0.0 == "x" && $0.1 }) {
                throw Rejection(message: "the (?x) flag is not supported in policy regexes")
              }
              i = j + 1
              continue
            }
            if let insensitive { frame.caseInsensitive = insensitive }
            if flags.contains(where: { $0.0 == "x" && $0.1 }) {
              throw Rejection(message: "the (?x) flag is not supported in policy regexes")
            }
            j += 1
          }
        }
        stack.append(frame)
        last = .none
        lastWasFirstOfAlternative = false
        i = j
      case ")":
        guard stack.count > 1 else {
          i += 1
          continue
        }
        var g = stack.removeLast()
        g.endAlternative()
        let first: Unicode.Scalar? = g.alternatives.count == 1 ? (g.alternatives[0] ?? nil) : nil
        stack[stack.count - 1].sequenceRepeats += g.maxSequenceRepeats
        if g.variable { stack[stack.count - 1].variable = true }
        if stack[stack.count - 1].sequenceRepeats > maxRepetitionsInSequence {
          throw reject("more than \(maxRepetitionsInSequence) repetitions in a row")
        }
        push(.group(g), first: first)
        i += 1
      case "|":
        stack[stack.count - 1].endAlternative()
        last = .none
        lastWasFirstOfAlternative = false
        i += 1
      case ".", "^", "$":
        push(c == "." ? .plain(first: nil) : .none, first: nil)
        i += 1
      default:
        push(.plain(first: c), first: c)
        i += 1
      }
    }
  }
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
