/// Which window facts another X client can rewrite, for `policy explain` (docs/policy.md,
/// "Matchers"): `class`, `instance` and `title` are properties of the window (`WM_CLASS`,
/// `_NET_WM_NAME`, `WM_NAME`), and X11 lets any client change any window's properties, so a
/// `secure` rule on them is dodged by one ChangeProperty. `exe`, `comm`, `pid` and `uid`
/// come from the X server (X-Resource) and /proc, which no other client can change.
extension Criterion {
  /// Whether any X client can rewrite this fact of any window.
  public var anyClientCanRewrite: Bool {
    switch self {
    case .class, .instance, .title: return true
    case .exe, .comm, .pid, .uid: return false
    }
  }
}

extension WindowExplanation {
  /// One note per `secure` rule with a criterion on a fact any client can rewrite: the
  /// criteria are AND-ed, so rewriting one of them takes a window out of the rule.
  /// A matching built-in rule on `class` gets one too.
  public var rewritableNotes: [String] {
    // A built-in class rule needs no note when the same program's exe rule matches too.
    let held = Set(builtin.filter { !$0.criteria.contains { $0.criterion.anyClientCanRewrite } }.map(\.label))
    let named =
      rules.map { ("rule #\($0.index + 1) \($0.label)", $0) }
      + builtin.filter { !held.contains($0.label) }.map { ("built-in: \($0.label)", $0) }
    return named.compactMap { name, r in
      let rewritable = r.criteria.map(\.criterion).filter(\.anyClientCanRewrite)
      guard !rewritable.isEmpty else { return nil }
      let names = rewritable.map(\.rawValue).joined(separator: ", ")
      return "note: \(name) looks at \(names), which any X client can rewrite on any "
        + "window (ChangeProperty): another client can take a window out of this rule. Protection that holds: "
        + "the window's own tag (_CAPTURE_SHIELD_SECURE), or a rule on exe (from the X server and /proc)"
    }
  }
}
