// `shieldctl doctor`'s decisions, pure: from the facts about a display, the policy and the
// daemon to findings in plain words, each with the fix when something is wrong.

/// Facts about a display that decide what protection it can get.
public struct DesktopFacts: Sendable, Hashable {
  /// The display name.
  public var display: String
  /// The server's vendor string and release number (from the connection setup).
  public var vendor: String
  public var vendorRelease: UInt32
  /// RECORD: request-level capture detection.
  public var hasRecord: Bool
  /// X-Resource: a client's PID (identity); the daemon cannot run without it.
  public var hasXRes: Bool
  /// SHAPE: shields follow shaped windows; the daemon cannot run without it.
  public var hasShape: Bool
  /// Xwayland (the XWAYLAND extension): the Wayland compositor, not X, decides captures.
  public var isXwayland: Bool
  /// The CaptureShield Xorg module's version ("1.2"), nil when it is not loaded.
  public var moduleVersion: String?
  /// Whether the module trusts the running daemon (`shieldctl watch`, its `Daemon`
  /// option), when the module is loaded; nil when no daemon runs to ask about. The module
  /// trusts no other shieldctl command (not `doctor`).
  public var moduleTrustsDaemon: Bool?
  /// `/proc/sys/kernel/yama/ptrace_scope` (nil: no Yama in this kernel, classic ptrace
  /// permissions, as 0).
  public var ptraceScope: Int?
  /// The owner of `_NET_WM_CM_Sn` (a compositing manager), as the X server identifies it.
  public var compositor: ClientIdentity?

  public init(
    display: String, vendor: String = "", vendorRelease: UInt32 = 0, hasRecord: Bool = true, hasXRes: Bool = true,
    hasShape: Bool = true, isXwayland: Bool = false, moduleVersion: String? = nil, moduleTrustsDaemon: Bool? = nil,
    compositor: ClientIdentity? = nil, ptraceScope: Int? = 1
  ) {
    self.display = display
    self.vendor = vendor
    self.vendorRelease = vendorRelease
    self.hasRecord = hasRecord
    self.hasXRes = hasXRes
    self.hasShape = hasShape
    self.isXwayland = isXwayland
    self.moduleVersion = moduleVersion
    self.moduleTrustsDaemon = moduleTrustsDaemon
    self.compositor = compositor
    self.ptraceScope = ptraceScope
  }
}

/// One line of `shieldctl doctor`.
public struct Finding: Sendable, Hashable, Codable {
  public enum Level: String, Sendable, Hashable, Codable {
    /// Works as it should.
    case ok
    /// Worth knowing; protection works.
    case note
    /// Protection cannot work as expected until it is fixed.
    case problem
  }

  /// What was checked ("X server", "RECORD", "compositor", ...).
  public var check: String
  public var level: Level
  /// What was found, in plain words.
  public var text: String
  /// What to do about it (problems and notes).
  public var fix: String?

  public init(_ check: String, _ level: Level, _ text: String, fix: String? = nil) {
    self.check = check
    self.level = level
    self.text = text
    self.fix = fix
  }
}

/// What `shieldctl doctor` knows about the daemon.
public enum DaemonHealth: Sendable, Hashable {
  /// No daemon owns the display's manager selection.
  case notRunning
  /// Something owns it, but it is not a healthy daemon (the reason).
  case unhealthy(String)
  /// The daemon runs and answered a ping; its published state.
  case running(DaemonState)
}

/// `shieldctl doctor`: what protection this desktop gets, and why.
public enum Diagnosis {
  /// The findings, in the order they are printed. `policy` is the loaded policy, or the
  /// loader's error text (every diagnostic, `file:line:col: error: ...`).
  public static func findings(
    facts: DesktopFacts, policyFiles: [String], policy: Result<Policy, PolicyError>, daemon: DaemonHealth
  ) -> [Finding] {
    var out: [Finding] = []
    let kind = facts.isXwayland ? "Xwayland" : "X server"
    if facts.isXwayland {
      out.append(
        Finding(
          "X server", .problem,
          "Xwayland (\(facts.vendor) \(facts.vendorRelease)) on \(facts.display): this is a Wayland session; the Wayland compositor, not X, decides who may capture the screen (screen-sharing portals), and CaptureShield cannot see or stop those captures",
          fix: "log in to an Xorg session (for example \"GNOME on Xorg\" at the login screen) to protect windows"))
    } else {
      out.append(Finding(kind, .ok, "\(facts.vendor) \(facts.vendorRelease) on \(facts.display)"))
    }
    for (name, present, why) in [
      ("X-Resource", facts.hasXRes, "tells which program each X client is"),
      ("SHAPE", facts.hasShape, "lets shields follow shaped windows"),
    ] {
      out.append(
        present
          ? Finding(name, .ok, "present (\(why))")
          : Finding(
            name, .problem, "missing: the daemon cannot run without it (it \(why))",
            fix: "use an X server with the \(name) extension (Xorg, Xvfb and Xephyr have it by default)"))
    }
    if facts.hasRecord {
      out.append(Finding("RECORD", .ok, "present (captures are detected request by request)"))
    } else {
      out.append(
        Finding(
          "RECORD", .problem,
          "missing: captures cannot be detected, so the daemon hides secure windows all the time (fail safe) and you never see them",
          fix:
            "enable RECORD in the X server: Xorg loads it by default (check that xorg.conf does not Disable \"record\"); do not start Xvfb or Xephyr with -extension RECORD"
        ))
    }
    switch (facts.moduleVersion, facts.moduleTrustsDaemon) {
    case (nil, _):
      out.append(
        Finding(
          "Xorg module", .note,
          "not loaded: the daemon hides secure windows with shield windows while a capture runs; a tool's first frame can race them",
          fix: "for censoring inside the X server, install the module (docs/server-enforcement.md)"))
    case (let v?, true?):
      out.append(Finding("Xorg module", .ok, "CaptureShield \(v) loaded; it trusts the daemon (shieldctl watch)"))
    case (let v?, false?):
      out.append(
        Finding(
          "Xorg module", .problem,
          "CaptureShield \(v) loaded but it does not trust the running daemon: the daemon cannot steer it and falls back to shield windows",
          fix:
            "name the daemon's program in Option \"Daemon\" of SubSection \"captureshield\" in xorg.conf (its user must be in Option \"DaemonUsers\", default root and the seat's user; docs/install.md), then restart the X server"
        ))
    case (let v?, nil):
      out.append(
        Finding(
          "Xorg module", .note,
          "CaptureShield \(v) loaded; it trusts shieldctl only as the daemon (shieldctl watch, Option \"Daemon\"), and no daemon runs to check"
        ))
    }
    out.append(ptraceFinding(facts.ptraceScope))

    switch policy {
    case .success(let p):
      let files = policyFiles.isEmpty ? "no policy file (the defaults)" : policyFiles.joined(separator: ", ")
      out.append(
        Finding(
          "policy", .ok,
          "\(files): valid (\(p.secure.count) secure rules, \(p.captureAllow.count) allow, shield.when \(p.when.rawValue))"
        ))
      if p.when == .always {
        out.append(
          Finding(
            "policy", .note, "shield.when is \"always\": secure windows stay hidden even when nobody captures",
            fix: "set shield.when to \"capturing\" to see them while nobody captures"))
      }
      out.append(compositorFinding(facts, p, daemon: daemon))
    case .failure(let error):
      out.append(
        Finding(
          "policy", .problem,
          "invalid: \(error.description.split(separator: "\n").joined(separator: "; ")); a running daemon keeps its last good policy, a new one does not start",
          fix: "correct the file (shieldctl policy check FILE shows each error), then shieldctl reload"))
      if let c = facts.compositor {
        out.append(Finding("compositor", .note, "\(program(c)) owns the compositor selection (policy unknown)"))
      }
    }

    switch daemon {
    case .notRunning:
      out.append(
        Finding(
          "daemon", .problem, "no CaptureShield daemon runs on \(facts.display): nothing is protected",
          fix: "systemctl --user enable --now captureshield (or run shieldctl watch)"))
    case .unhealthy(let why):
      out.append(
        Finding(
          "daemon", .problem, "not protecting: \(why)",
          fix: "systemctl --user restart captureshield (shieldctl status shows the details)"))
    case .running(let s):
      out.append(Finding("daemon", .ok, "running (pid \(s.pid)), answering"))
      var live: [String] = []
      for row in s.sessions {
        let who = row.exe ?? "client \(row.client)"
        if !live.contains(who) { live.append(who) }
      }
      if s.paused {
        out.append(
          Finding(
            "secure windows", .note, "shown to every capture: shielding is paused", fix: "shieldctl resume"))
      } else if s.enforcement?.kind == "server" {
        // The module censors every untrusted read, captures or not, and never hides a
        // window from the screen: the daemon's `shield.when` and sessions change neither.
        out.append(
          Finding(
            "secure windows", .ok,
            "visible to you; black in every capture by a program the Xorg module does not trust (it censors them inside the X server)"
          ))
      } else if !live.isEmpty {
        out.append(
          Finding(
            "secure windows", .ok,
            "hidden right now while these capture: \(live.joined(separator: ", ")) (you see them again when the capture ends)"
          ))
      } else if s.policy.when == .always {
        out.append(Finding("secure windows", .note, "hidden right now (shield.when is \"always\")"))
      } else {
        out.append(Finding("secure windows", .ok, "visible to you right now: nobody captures"))
      }
    }
    return out
  }

  /// What Yama's ptrace scope means for the trust CaptureShield gives (never a problem:
  /// the kernel setting is the admin's call; docs/security.md, "Trust model").
  static func ptraceFinding(_ scope: Int?) -> Finding {
    let fix =
      "to keep same-user programs out of other processes' memory: sysctl kernel.yama.ptrace_scope=1 (in /etc/sysctl.d/ to keep it)"
    switch scope {
    case nil:
      return Finding(
        "ptrace", .note,
        "no Yama in this kernel: classic ptrace permissions (as ptrace_scope 0): any program of your user can read and change the memory of any other, the trusted compositor's and the daemon's included; an attacker running as you is beyond CaptureShield's reach",
        fix: "use a kernel with Yama (CONFIG_SECURITY_YAMA)")
    case 0?:
      return Finding(
        "ptrace", .note,
        "kernel.yama.ptrace_scope is 0: any program of your user can read and change the memory of any other (ptrace, /proc/PID/mem), the trusted compositor's and the daemon's included; an attacker running as you is beyond CaptureShield's reach",
        fix: fix)
    case 1?:
      return Finding(
        "ptrace", .ok,
        "kernel.yama.ptrace_scope is 1: a program can read another's memory only if it is its parent (or was named by it); a same-user program cannot read the compositor's or the daemon's memory unless it started them (the daemon refuses a compositor started by an untrusted client)"
      )
    case 2?:
      return Finding(
        "ptrace", .ok, "kernel.yama.ptrace_scope is 2: only root (CAP_SYS_PTRACE) can read another program's memory")
    case let n?:
      return Finding(
        "ptrace", .ok, "kernel.yama.ptrace_scope is \(n): no program can attach to another with ptrace")
    }
  }

  /// The compositor and whether the policy trusts it (under the Xorg module: whether the
  /// daemon granted it).
  static func compositorFinding(_ facts: DesktopFacts, _ policy: Policy, daemon: DaemonHealth = .notRunning)
    -> Finding
  {
    guard let c = facts.compositor else {
      return Finding("compositor", .ok, "none (no client owns the compositor selection)")
    }
    if case .running(let s) = daemon, let why = s.enforcement?.compositorRefused {
      return Finding(
        "compositor", .problem,
        "\(program(c)) is not granted by the daemon: \(why); the Xorg module censors its reads, so secure windows are black on your screen",
        fix:
          "start the compositor from your session (its autostart, the window manager's configuration or systemd --user), not from a terminal or another program, as your own user; then restart it"
      )
    }
    if case .trusted(let rule) = policy.compositorTrust(c) {
      return Finding(
        "compositor", .ok, "\(program(c)) is trusted (\(rule): a root-owned program in a system directory)")
    }
    switch policy.classify(c) {
    case .allowed:
      return Finding("compositor", .ok, "\(program(c)) is trusted (capture.allow)")
    case .unidentified:
      return Finding(
        "compositor", .problem,
        "a client that cannot be identified (\(c.failure ?? "no PID")) owns the compositor selection: it counts as capturing, so secure windows stay hidden while it runs",
        fix: "run the compositor on this machine (not over TCP), then add it to capture.allow")
    case .known, .ordinary:
      var why = policy.allowRefusal(c).map { " (an allow rule matches, but: \($0))" } ?? ""
      switch policy.compositorTrust(c) {
      case .notASystemProgram, .injected: why += " (\(policy.compositorTrust(c).description))"
      default: break
      }
      return Finding(
        "compositor", .problem,
        "\(program(c)) is not trusted\(why): it counts as capturing, so secure windows stay hidden while it runs",
        fix: c.exe.map {
          "if you trust it, add it to your policy: capture: { allow: [{ exe: \"\($0)\" }] }, then shieldctl reload"
        } ?? "add it to capture.allow in your policy")
    }
  }

  static func program(_ c: ClientIdentity) -> String {
    let exe = c.exe ?? c.comm ?? "an unknown program"
    return c.pid.map { "\(exe) (pid \($0))" } ?? exe
  }
}
