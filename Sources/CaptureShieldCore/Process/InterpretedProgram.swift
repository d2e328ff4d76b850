// Which script an interpreter runs (`ClientIdentity.script`). xpra, shutter and many other
// capture tools are scripts: their executable is `/usr/bin/python3.11` or `/usr/bin/perl`,
// so the audit log and the notice named the interpreter, and a known-capturer rule on the
// tool's name missed them. The script is the first argument that is not an interpreter
// option (`python3 -u /usr/bin/xpra shadow :0` → `/usr/bin/xpra`); `-c`/`-e` code and
// `-m module` run no script file.
//
// What the script's name is good for: naming (audit, notice) and `capture.known` (which
// only makes the daemon stricter). It never allows anything: an allow rule names an
// executable, and the interpreter runs whatever file it is given.

/// The script an interpreter process runs, from its executable and command line. Pure.
public enum InterpretedProgram {
  /// Interpreters by executable file name: the name or the name followed by a version
  /// (`python3`, `python3.11`, `perl5.36.0`, `ruby3.1`).
  static let interpreters = ["python", "perl", "ruby", "bash", "sh", "dash"]

  /// Options of each interpreter family that take the next argument as their value.
  static let optionsWithValue: [String: Set<String>] = [
    "python": ["-W", "-X", "-Q"],
    "perl": ["-I", "-M", "-m", "-x", "-C"],
    "ruby": ["-I", "-r", "-E", "-C", "-x"],
    "bash": ["-o", "-O", "--rcfile", "--init-file"],
    "sh": ["-o"],
    "dash": ["-o"],
  ]

  /// Options after which no script file runs (code on the command line, a module).
  static let noScriptOptions: [String: Set<String>] = [
    "python": ["-c", "-m", "-"],
    "perl": ["-e", "-E", "-"],
    "ruby": ["-e", "-"],
    "bash": ["-c", "-s", "-"],
    "sh": ["-c", "-s", "-"],
    "dash": ["-c", "-s", "-"],
  ]

  /// The interpreter family of an executable path, nil when it is not one.
  public static func family(ofExecutable exe: String) -> String? {
    guard let name = exe.split(separator: "/").last.map(String.init) else { return nil }
    for f in interpreters {
      guard name.hasPrefix(f) else { continue }
      let rest = name.dropFirst(f.count)
      if rest.isEmpty || rest.allSatisfy({ $0.isNumber || $0 == "." }) { return f }
    }
    return nil
  }

  /// The script argument as written (absolute or relative to the process's working
  /// directory), nil when `exe` is not an interpreter or runs no script file.
  public static func scriptArgument(exe: String?, cmdline: [String]?) -> String? {
    guard let exe, let family = family(ofExecutable: exe), let cmdline, cmdline.count > 1 else { return nil }
    let withValue = optionsWithValue[family] ?? []
    let noScript = noScriptOptions[family] ?? []
    var i = 1
    while i < cmdline.count {
      let a = cmdline[i]
      if a == "--" { return i + 1 < cmdline.count ? nonEmpty(cmdline[i + 1]) : nil }
      if noScript.contains(a) { return nil }
      guard a.hasPrefix("-") || (family == "bash" || family == "sh" || family == "dash") && a.hasPrefix("+") else {
        return nonEmpty(a)
      }
      // Joined short options (`-uc code`, `-Bm module`): a code or module option among them
      // means no script file.
      if !a.hasPrefix("--"), a.count > 2,
        a.dropFirst().contains(where: { noScript.contains("-" + String($0)) })
      {
        return nil
      }
      i += withValue.contains(a) ? 2 : 1
    }
    return nil
  }

  /// An absolute path without `.` and `..` components and repeated slashes (lexically:
  /// symbolic links are kept, so a tool installed as a link keeps its own name).
  public static func lexicallyNormalized(_ path: String) -> String {
    var parts: [Substring] = []
    for c in path.split(separator: "/", omittingEmptySubsequences: true) {
      if c == "." { continue }
      if c == ".." {
        _ = parts.popLast()
        continue
      }
      parts.append(c)
    }
    return "/" + parts.joined(separator: "/")
  }

  private static func nonEmpty(_ s: String) -> String? { s.isEmpty ? nil : s }
}
