import CaptureShield
import Foundation

/// `shieldctl doctor`: what protection this desktop gets, and why.
struct DoctorCommand: Command {
  static let name = "doctor"
  static let abstract = "Check what protection this desktop gets, and why."
  static let usage = "shieldctl doctor [--policy FILE]... [--display D] [--json]"
  static let help = """
    OVERVIEW: Check what protection this desktop gets, and why.

    USAGE: shieldctl doctor [--policy FILE]... [--display D] [--json]

    Checks, in plain words, each thing CaptureShield depends on, and prints one line
    per check ('ok', 'note' or 'PROBLEM'), with what to do for each problem:
      - the X server, and whether it is Xwayland (a Wayland session);
      - the X extensions the daemon needs: X-Resource, SHAPE, RECORD;
      - the CaptureShield Xorg module: loaded or not, and whether it trusts this
        shieldctl;
      - the policy files, and whether they are valid;
      - the compositor (the owner of _NET_WM_CM_Sn), and whether the policy trusts it
        (an untrusted compositor counts as capturing: secure windows stay hidden);
      - whether the daemon runs and answers;
      - whether a secure window is visible to you right now;
      - what makes windows secure: the built-in list (password managers, credential
        prompts), your rules with the remembered ones ('tag --remember'), and tags,
        with how many windows each covers while a daemon runs; a file of remembered
        rules that cannot be read is a PROBLEM (those rules are not in force).
    The policy checked is the one given with --policy, else the running daemon's files,
    else the default files (as 'shieldctl watch' finds them).

    OPTIONS:
      --policy FILE   Check this policy file instead. Repeat for several, in load order.
      --json          Print the findings as JSON: [{"check", "level", "text", "fix"}].
      --display D     The X display (default: $DISPLAY).
      -h, --help      Show this help.

    EXIT STATUS:
      0   protection works as the policy says (notes may still say how to do better)
      1   a PROBLEM: protection cannot work as expected until it is fixed, or the
          display cannot be reached
      64  usage error
    """

  var display: String?
  var policies: [String]?
  var json: Bool

  static func parse(_ args: [String]) throws(UsageError) -> DoctorCommand {
    let p = try ArgumentScanner.scan(
      args, options: [.value("--policy", repeatable: true), .value("--display"), .flag("--json")])
    try p.expectPositionals(max: 0)
    let policies = p.all("--policy")
    if policies.contains("") { throw UsageError("option '--policy' requires a file name, not an empty string") }
    return DoctorCommand(
      display: try Common.display(p), policies: policies.isEmpty ? nil : policies, json: p.flag("--json"))
  }

  /// Why the file of remembered rules cannot be read back, or nil (also when it does not exist).
  static func rememberedProblem() -> String? {
    guard let path = RememberedRules.path(environment: ProcessInfo.processInfo.environment),
      FileManager.default.fileExists(atPath: path)
    else { return nil }
    do {
      _ = try RememberedFile.read(path)
      _ = try PolicyLoader.load(paths: [path])
      return nil
    } catch {
      return Output.message(of: error)
    }
  }

  func run() throws -> Int32 {
    let control = try XControl(display: display)
    let facts = control.desktopFacts()
    let health: DaemonHealth
    var daemonFiles: [String]?
    do {
      if let state = try control.readState() {
        daemonFiles = state.policy.sources
        if let problem = control.daemonProblem(state) ?? control.unresponsiveDaemon(state) {
          health = .unhealthy(problem)
        } else {
          health = .running(state)
        }
      } else {
        health = .notRunning
      }
    } catch {
      health = .unhealthy("\(error)")
    }
    let files = policies ?? daemonFiles ?? PolicyLoader.defaultPaths()
    let policy: Result<Policy, PolicyError>
    if files.isEmpty {
      policy = .success(Policy())
    } else {
      do throws(PolicyError) {
        policy = .success(try PolicyLoader.load(paths: files))
      } catch {
        policy = .failure(error)
      }
    }
    var findings = Diagnosis.findings(facts: facts, policyFiles: files, policy: policy, daemon: health)
    var runningState: DaemonState?
    if case .running(let state) = health { runningState = state }
    findings += Diagnosis.secureSources(
      policy: try? policy.get(), daemon: runningState, rememberedProblem: Self.rememberedProblem())
    let problems = findings.filter { $0.level == .problem }.count
    if json {
      try Output.json(findings)
    } else {
      print("CaptureShield doctor, display \(Text.show(facts.display)):")
      for f in findings {
        let level = f.level == .problem ? "PROBLEM" : f.level.rawValue
        print(
          "  " + level.padding(toLength: 9, withPad: " ", startingAt: 0) + Text.show(f.check) + ": "
            + Text.show(f.text, limit: 2000))
        if let fix = f.fix { print("            fix: " + Text.show(fix, limit: 2000)) }
      }
      print(
        problems == 0
          ? "Protection works as the policy says."
          : "Protection cannot work as expected: \(problems) problem\(problems == 1 ? "" : "s") above.")
    }
    return problems == 0 ? ExitCode.ok : ExitCode.failure
  }
}
