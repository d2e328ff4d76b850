extension Diagnosis {
  /// What makes windows secure: the built-in list, the policy's rules (remembered ones
  /// among them) and tags; with a running daemon, how many windows each covers now.
  /// `rememberedProblem`: why the file of remembered rules cannot be read (a problem:
  /// those rules are not in force).
  public static func secureSources(policy: Policy?, daemon: DaemonState?, rememberedProblem: String?) -> [Finding] {
    var out: [Finding] = []
    let secure = daemon?.windows.filter(\.secure) ?? []
    func now(_ rows: [DaemonState.WindowRow]) -> String {
      guard daemon != nil else { return "" }
      return "; \(rows.count) secure window\(rows.count == 1 ? "" : "s") now"
    }
    let builtinRows = secure.filter { $0.reason.hasPrefix("built-in") }
    let ruleRows = secure.filter { $0.reason.hasPrefix("rule #") }
    let tagRows = secure.filter { $0.reason == "tag" || $0.reason.hasPrefix("malformed tag") }
    if let policy {
      let builtin = policy.builtinSecure.count
      out.append(
        Finding(
          "secure by default", builtin == 0 ? .note : .ok,
          builtin == 0
            ? "the built-in list of password managers and credential prompts is off (replaceDefaultSecure)"
              + now(builtinRows)
            : "\(builtin) built-in rules (password managers, credential prompts)" + now(builtinRows),
          fix: builtin == 0 ? "remove replaceDefaultSecure: true to have them secure with no rule or tag" : nil))
      let remembered = policy.secure.filter { $0.name?.hasPrefix(RememberedRules.namePrefix) == true }.count
      out.append(
        Finding(
          "secure by your rules", .ok,
          "\(policy.secure.count) rule\(policy.secure.count == 1 ? "" : "s") of the policy files, \(remembered) of them remembered ('shieldctl tag --remember')"
            + now(ruleRows)))
    }
    if let rememberedProblem {
      out.append(
        Finding(
          "remembered rules", .problem, "NOT in force: \(rememberedProblem)",
          fix: "fix the file, or remove it and remember the applications again ('shieldctl tag --remember')"))
    }
    if daemon != nil {
      out.append(
        Finding(
          "secure by tags", .ok,
          "\(tagRows.count) tagged window\(tagRows.count == 1 ? "" : "s") (the app's own tag or 'shieldctl tag')"))
    }
    return out
  }
}
