import CaptureShield
import Foundation
import ShieldTestSupport

/// Policy and engine throughput: 200 `secure` rules against 5,000 windows.
///
/// Measures, with `ContinuousClock` (median of many repetitions):
/// - `policy_full_eval_ms`: `Policy.secureReason` for all 5,000 windows (what a policy
///   reload costs in rule matching);
/// - `engine_incremental_us`: one `.windowChanged` (a title change) handled by an engine
///   already holding the 5,000 windows; `engine_incremental_secure_us` the same for a
///   window that is secure (the engine then scans the client's other windows);
/// - `engine_load_5000_ms`: 5,000 `.windowAppeared` into a fresh engine (start-up scan).
///
/// Prints a small table and returns the figures. Build with `-c release` to measure.
func runPolicyBenchmark() -> [String: Double] {
  var rng = SplitMix64(seed: 0x5eed_cafe)
  let policy = BenchData.policy(rules: 200)
  let clients = BenchData.clients(count: 250, rng: &rng)
  let windows = BenchData.windows(count: 5_000, clients: clients, rng: &rng)

  // Facts as the engine sees them (client facts merged), for the policy-only figure.
  let identities = Dictionary(uniqueKeysWithValues: clients.map { ($0.id, $0.identity) })
  let merged: [(Facts, TagState)] = windows.map { w in
    var f = w.facts
    if let c = w.client, let id = identities[c] {
      f.exe = f.exe ?? id.exe
      f.comm = f.comm ?? id.comm
      f.pid = f.pid ?? id.pid
      f.uid = f.uid ?? id.uid
    }
    return (f, w.tag)
  }

  var results: [String: Double] = [:]
  var secureCount = 0

  // (a) One full evaluation: every window against the rules.
  let full = BenchTiming.median(repetitions: 25, warmup: 2) {
    var n = 0
    for (f, tag) in merged where policy.secureReason(facts: f, tag: tag).isSecure { n += 1 }
    secureCount = n
  }
  results["policy_full_eval_ms"] = full * 1e3
  results["policy_per_window_us"] = full * 1e6 / Double(windows.count)
  results["secure_windows"] = Double(secureCount)

  // Clients are connected first so exe/pid/uid rules apply to their windows.
  var withClients = Engine(policy: policy)
  for c in clients {
    _ = withClients.handle(.clientConnected(c.id, c.identity), now: MonotonicTime(nanoseconds: 1_000_000_000))
  }
  // Copies `withClients` (a value) and adds every window.
  func loadedEngine() -> Engine {
    var e = withClients
    var now = e.now
    for w in windows {
      now = MonotonicTime(nanoseconds: now.nanoseconds + 1_000)
      _ = e.handle(.windowAppeared(w), now: now)
    }
    return e
  }

  // (b) One incremental decision: a title change of one window.
  func incremental(_ window: WindowInfo) -> Double {
    var e = loadedEngine()
    var a = window
    var b = window
    b.facts.title = (window.facts.title ?? "") + " (2)"
    var now = e.now
    var effects = 0
    let t = BenchTiming.median(repetitions: 3_000, warmup: 100) {
      now = MonotonicTime(nanoseconds: now.nanoseconds + 1_000)
      effects &+= e.handle(.windowChanged(a), now: now).count
      swap(&a, &b)
    }
    blackHole(effects)
    return t
  }
  let probe = loadedEngine()
  let plain = windows.first { probe.windows[$0.id]?.reason.isSecure == false && $0.client != nil }!
  let secure = windows.first { probe.windows[$0.id]?.reason.isSecure == true && $0.client != nil }!
  results["engine_incremental_us"] = incremental(plain) * 1e6
  results["engine_incremental_secure_us"] = incremental(secure) * 1e6

  // (c) Loading 5,000 windows into a fresh engine.
  let load = BenchTiming.median(repetitions: 15, warmup: 1) {
    let e = loadedEngine()
    blackHole(e.windows.count)
  }
  results["engine_load_5000_ms"] = load * 1e3

  print("policy benchmark: \(policy.secure.count) rules, \(windows.count) windows, \(clients.count) clients")
  print("  (\(secureCount) windows secure by rule or tag)")
  let rows: [(String, String, String)] = [
    ("policy_full_eval_ms", "ms", "full evaluation, 5,000 windows x 200 rules"),
    ("policy_per_window_us", "us", "per window"),
    ("engine_incremental_us", "us", "one windowChanged (plain window), engine holding 5,000"),
    ("engine_incremental_secure_us", "us", "one windowChanged (secure window)"),
    ("engine_load_5000_ms", "ms", "5,000 windowAppeared into a fresh engine"),
  ]
  print("  " + "figure".padding(toLength: 30, withPad: " ", startingAt: 0) + "    median  what")
  for (key, unit, what) in rows {
    let value = String(format: "%10.3f", results[key] ?? .nan)
    print("  " + key.padding(toLength: 30, withPad: " ", startingAt: 0) + value + " \(unit)  \(what)")
  }
  return results
}

// MARK: - Data

private enum BenchData {
  struct Client {
    var id: ClientID
    var identity: ClientIdentity
    var app: App
  }
  struct App {
    var `class`: String
    var instance: String
    var exe: String
    var titles: [String]
  }

  static let apps: [App] = [
    App(
      class: "firefox", instance: "Navigator", exe: "/usr/lib/firefox/firefox",
      titles: ["Inbox - Mail", "Online Banking - Account 42 overview", "GitHub", "Search results", "News"]),
    App(
      class: "Google-chrome", instance: "google-chrome", exe: "/opt/google/chrome/chrome",
      titles: ["Dashboard", "Payroll 2024: March", "Docs - Untitled document", "YouTube"]),
    App(class: "XTerm", instance: "xterm", exe: "/usr/bin/xterm", titles: ["user@host: ~", "vim notes.txt", "htop"]),
    App(
      class: "Alacritty", instance: "Alacritty", exe: "/usr/bin/alacritty",
      titles: ["zsh", "ssh prod-db-1", "make test"]),
    App(
      class: "Code", instance: "code", exe: "/usr/share/code/code",
      titles: ["main.swift - Project", "Settings", "README.md"]),
    App(
      class: "Slack", instance: "slack", exe: "/usr/lib/slack/slack",
      titles: ["Slack | general", "Slack | Confidential-17 review"]),
    App(
      class: "Thunderbird", instance: "Mail", exe: "/usr/lib/thunderbird/thunderbird",
      titles: ["Inbox", "Write: Re: contract", "Calendar"]),
    App(
      class: "org.gnome.Nautilus", instance: "nautilus", exe: "/usr/bin/nautilus",
      titles: ["Home", "Downloads", "Documents"]),
    App(
      class: "libreoffice-calc", instance: "libreoffice", exe: "/usr/lib/libreoffice/program/soffice.bin",
      titles: ["budget.ods", "salaries.ods"]),
    App(class: "mpv", instance: "gl", exe: "/usr/bin/mpv", titles: ["video.mkv - mpv"]),
    App(class: "KeePassXC", instance: "keepassxc", exe: "/usr/bin/keepassxc", titles: ["Passwords.kdbx - KeePassXC"]),
    App(class: "Bitwarden", instance: "bitwarden", exe: "/opt/Bitwarden/bitwarden", titles: ["Bitwarden"]),
    App(class: "Signal", instance: "signal", exe: "/opt/Signal/signal-desktop", titles: ["Signal", "Note to Self"]),
    App(
      class: "Gimp-2.10", instance: "gimp", exe: "/usr/bin/gimp-2.10",
      titles: ["[Untitled]-1.0 (RGB color 8-bit)", "Layers"]),
    App(class: "Steam", instance: "steam", exe: "/usr/lib/steam/steam", titles: ["Steam", "Friends List"]),
  ]

  /// 200 rules: class globs, anchored title regexes, exe globs, combined criteria, a few
  /// pid/uid rules; the realistic ones (password managers, banking) come last, so most
  /// windows are checked against every rule.
  static func policy(rules: Int) -> Policy {
    func p(_ s: String) -> Pattern { try! Pattern.parse(s) }
    var secure: [Matcher] = []
    for i in 0..<(rules - 5) {
      let m: Matcher
      switch i % 10 {
      case 0: m = Matcher(class: p("SecureApp\(i)*"))
      case 1: m = Matcher(class: p("*Vault\(i)"))
      case 2: m = Matcher(class: p("[Pp]rivate-\(i)-[a-z]*"))
      case 3: m = Matcher(title: p("/.*Confidential-\(i)\\b.*/"))
      case 4: m = Matcher(title: p("/(Bank|Payroll|Tax) \(i)[: ].*/"))
      case 5: m = Matcher(exe: p("*/secure-tool-\(i)"))
      case 6: m = Matcher(exe: p("/opt/vendor\(i)/bin/*"))
      case 7: m = Matcher(class: p("firefox"), title: p("/.*Account \(i) .*/"))
      case 8: m = Matcher(instance: p("term\(i)*"), exe: p("*/bin/*"))
      default: m = i % 20 == 9 ? Matcher(pid: 90_000 + i) : Matcher(class: p("*"), uid: 2_000 + i)
      }
      var named = m
      named.name = "bench \(i)"
      secure.append(named)
    }
    secure += [
      Matcher(class: p("KeePassXC"), name: "keepassxc"),
      Matcher(exe: p("*/bitwarden"), name: "bitwarden"),
      Matcher(class: p("Signal"), title: p("/Note to .*/"), name: "signal notes"),
      Matcher(title: p("/.*[Bb]anking.*/"), name: "banking"),
      Matcher(class: p("libreoffice-*"), title: p("salaries*"), name: "salaries"),
    ]
    var policy = Policy()
    policy.secure = secure
    policy.when = .always
    return policy
  }

  static func clients(count: Int, rng: inout SplitMix64) -> [Client] {
    (0..<count).map { i in
      let app = rng.pick(apps)
      let identity = ClientIdentity(
        pid: 10_000 + i, exe: app.exe, comm: String((app.exe.split(separator: "/").last ?? "x").prefix(15)),
        uid: rng.chance(0.05) ? 0 : 1000)
      return Client(id: ClientID(UInt32(0x0040_0000 + i * 0x0020_0000 % 0x7fe0_0000)), identity: identity, app: app)
    }
  }

  static func windows(count: Int, clients: [Client], rng: inout SplitMix64) -> [WindowInfo] {
    (0..<count).map { i in
      let c = clients[i % clients.count]
      let title = rng.pick(c.app.titles) + (rng.chance(0.5) ? " - \(rng.int(1_000))" : "")
      let tag: TagState = rng.chance(0.01) ? .secure : (rng.chance(0.01) ? .notSecure : .absent)
      return WindowInfo(
        id: c.id.base + UInt32(i / clients.count + 1), client: c.id,
        facts: Facts(class: c.app.class, instance: c.app.instance, title: title), tag: tag)
    }
  }
}

// MARK: - Timing

private enum BenchTiming {
  /// Median wall time of `body` in seconds.
  static func median(repetitions: Int, warmup: Int, _ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    for _ in 0..<warmup { body() }
    var samples: [Double] = []
    samples.reserveCapacity(repetitions)
    for _ in 0..<repetitions {
      let d = clock.measure(body)
      samples.append(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
    }
    samples.sort()
    let mid = samples.count / 2
    return samples.count % 2 == 1 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2
  }
}

@inline(never)
private func blackHole<T>(_ value: T) {
  withExtendedLifetime(value) {}
}
