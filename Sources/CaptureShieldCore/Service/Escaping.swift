/// Escaping of untrusted text (window titles, WM_CLASS, executable paths, policy keys and
/// values, client names) before it is printed on a terminal or written to a log.
///
/// Such text comes from other programs or from files anyone may have written. Printed
/// raw, a control character can move the cursor or clear the screen (`ESC [2J`), a line
/// break can forge a line of output, and a bidirectional control (`U+202E`) can reorder
/// the rest of the line so that what the reader sees is not what was written. Every
/// place that prints such text goes through `Escaping.show` (or, for a format with its
/// own escapes, tests each character with `Escaping.mustEscape`).
public enum Escaping {
  /// Whether `c` is never printed as itself: it is written as an escape (`\u{202e}`).
  ///
  /// These are:
  /// - C0 controls (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F);
  /// - bidirectional controls: ALM (U+061C), LRM and RLM (U+200E, U+200F), the
  ///   embeddings and overrides (U+202A–U+202E) and the isolates (U+2066–U+2069);
  /// - line and paragraph separators (U+2028, U+2029);
  /// - invisible format characters that make one string look like another: soft hyphen
  ///   (U+00AD), Mongolian vowel separator (U+180E), zero-width space, non-joiner and
  ///   joiner (U+200B–U+200D), word joiner and invisible operators (U+2060–U+2064),
  ///   deprecated format controls (U+206A–U+206F), the byte order mark / zero-width
  ///   no-break space (U+FEFF) and interlinear annotation controls (U+FFF9–U+FFFB).
  ///
  /// All are in the Basic Multilingual Plane, so a format with four-digit escapes (JSON's
  /// `\uXXXX`) can write each of them.
  public static func mustEscape(_ c: Unicode.Scalar) -> Bool {
    switch c.value {
    case 0x00...0x1F, 0x7F...0x9F: return true
    case 0xAD, 0x061C, 0x180E: return true
    case 0x200B...0x200F, 0x2028...0x202E, 0x2060...0x2064, 0x2066...0x206F: return true
    case 0xFEFF, 0xFFF9...0xFFFB: return true
    default: return false
    }
  }

  /// `s` made safe to print on one terminal line: every character `mustEscape` names is
  /// written as `\u{hex}` (lowercase, e.g. `\u{1b}`, `\u{202e}`), and `s` is cut after
  /// `limit` Unicode scalars with `…` appended. Other text, non-ASCII included ("Grüße",
  /// "日本語", emoji), is kept as is.
  ///
  /// One exception keeps emoji whole: a zero-width joiner (U+200D) between two pictographs
  /// (as in 👩‍💻, a ZWJ sequence) is kept; anywhere else it is escaped.
  ///
  /// - Parameters:
  ///   - s: the untrusted text.
  ///   - limit: the most Unicode scalars of `s` kept (each escape counts as one).
  public static func show(_ s: String, limit: Int) -> String {
    let limit = max(limit, 0)
    // One scalar past the limit: enough to see whether the text was cut.
    let scalars = Array(s.unicodeScalars.prefix(limit == Int.max ? limit : limit + 1))
    var out = String.UnicodeScalarView()
    for (i, c) in scalars.enumerated() {
      if i >= limit {
        out.append("…")
        break
      }
      if mustEscape(c), !(c.value == 0x200D && joinsPictographs(scalars, at: i)) {
        out.append(contentsOf: escape(c).unicodeScalars)
      } else {
        out.append(c)
      }
    }
    return String(out)
  }

  /// `\u{hex}`: how `show` writes an escaped scalar.
  public static func escape(_ c: Unicode.Scalar) -> String {
    "\\u{" + String(c.value, radix: 16) + "}"
  }

  /// Whether the joiner at `i` is inside an emoji ZWJ sequence: a pictograph (possibly
  /// followed by a variation selector or skin-tone modifier) before it, a pictograph
  /// right after it.
  static func joinsPictographs(_ scalars: [Unicode.Scalar], at i: Int) -> Bool {
    guard i > 0, i + 1 < scalars.count, isPictograph(scalars[i + 1]) else { return false }
    var j = i - 1
    while j > 0, scalars[j].value == 0xFE0F || (0x1F3FB...0x1F3FF).contains(scalars[j].value) { j -= 1 }
    return isPictograph(scalars[j])
  }

  /// An emoji other than the ASCII ones (digits, `#`, `*`), which only become emoji with
  /// a keycap and never join.
  static func isPictograph(_ c: Unicode.Scalar) -> Bool {
    c.value > 0x7F && c.properties.isEmoji
  }
}
