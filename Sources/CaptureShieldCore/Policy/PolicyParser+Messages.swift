// How diagnostics are worded: user-supplied strings shown safely, "did you mean"
// suggestions, lists of allowed values, regular-expression complaints.

import Foundation

extension PolicyParser {
  /// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
  static func orList(_ items: [String]) -> String {
    guard items.count > 1 else { return items.first ?? "" }
    return items.dropLast().joined(separator: ", ") + " or " + items.last!
  }

  /// Why a regex failed to compile: Swift's regex parser names the problem precisely
  /// ("expected ')'"); NSRegularExpression on Linux only says the value is invalid.
  static func regexComplaint(_ body: String, _ error: any Error) -> String {
    do {
      _ = try Regex(body)
    } catch {
      return String(describing: error)
    }
    let ns = error as NSError
    return ns.localizedFailureReason ?? ns.localizedDescription
  }

  /// A user-supplied string made safe for a one-line diagnostic: control, line-break,
  /// bidirectional and invisible format characters escaped, long strings cut
  /// (`Escaping.show`).
  static func show(_ s: String, limit: Int = 80) -> String {
    Escaping.show(s, limit: limit)
  }

  /// The candidate within a small edit distance of `word` (for "did you mean"), if any.
  static func closest(to word: String, in candidates: [String]) -> String? {
    let limit = word.unicodeScalars.count <= 4 ? 1 : 2
    var best: (String, Int)?
    for c in candidates {
      let d = Self.editDistance(word.lowercased(), c.lowercased(), cap: limit + 1)
      if d <= limit, best == nil || d < best!.1 { best = (c, d) }
    }
    return best?.0
  }

  /// Optimal-string-alignment distance (insertions, deletions, substitutions and adjacent
  /// transpositions), giving up at `cap` so hostile long keys stay cheap.
  static func editDistance(_ a: String, _ b: String, cap: Int) -> Int {
    let a = Array(a.unicodeScalars)
    let b = Array(b.unicodeScalars)
    if abs(a.count - b.count) >= cap { return cap }
    if a.isEmpty || b.isEmpty { return min(cap, max(a.count, b.count)) }
    var prev2 = [Int](repeating: 0, count: b.count + 1)
    var prev = Array(0...b.count)
    var cur = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
      cur[0] = i
      var rowMin = cur[0]
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        var v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          v = min(v, prev2[j - 2] + 1)
        }
        cur[j] = v
        rowMin = min(rowMin, v)
      }
      if rowMin >= cap { return cap }
      (prev2, prev, cur) = (prev, cur, prev2)
    }
    return min(prev[b.count], cap)
  }
}
