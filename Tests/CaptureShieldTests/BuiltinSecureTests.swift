// The built-in secure list (`Policy.defaultSecure`): password managers and credential
// prompts are secure with no policy file, matched by what the real programs set (the
// identities in docs/policy.md, "Built-in secure programs"); `replaceDefaultSecure` drops it.

import Foundation
import Testing

@testable import CaptureShieldCore

private func parse(_ text: String) throws -> PolicyFile { try PolicyParser.parse(text, path: "t.json5") }

private func diagnostics(_ text: String) -> [String] {
  do {
    _ = try PolicyParser.parse(text, path: "t.json5")
    return []
  } catch {
    return error.diagnostics.map(\.description)
  }
}

/// A window's facts as the program was seen to set them on Debian 12 (xprop WM_CLASS,
/// /proc/PID/exe), and the built-in rule that must name it.
struct SeenWindow: Sendable, CustomStringConvertible {
  var instance: String
  var cls: String
  var exe: String
  var program: String
  var description: String { "\(program): \(instance)/\(cls) \(exe)" }
  var facts: Facts { Facts(class: cls, instance: instance, exe: exe, comm: String(exe.split(separator: "/").last!)) }
}

@Suite("Built-in secure list")
struct BuiltinSecureTests {
  static let seen: [SeenWindow] = [
    .init(instance: "keepassxc", cls: "KeePassXC", exe: "/usr/bin/keepassxc", program: "KeePassXC"),
    .init(instance: "keepass2", cls: "KeePass2", exe: "/usr/bin/mono-sgen", program: "KeePass2"),
    .init(instance: "pinentry-gtk-2", cls: "Pinentry-gtk-2", exe: "/usr/bin/pinentry-gtk-2", program: "pinentry-gtk-2"),
    .init(instance: "pinentry-qt", cls: "pinentry-qt", exe: "/usr/bin/pinentry-qt", program: "pinentry-qt"),
    .init(instance: "FLTK", cls: "FLTK", exe: "/usr/bin/pinentry-fltk", program: "pinentry-fltk"),
    .init(instance: "pinentry-x2go", cls: "pinentry-x2go", exe: "/usr/bin/pinentry-x2go", program: "pinentry-x2go"),
    .init(instance: "gcr-prompter", cls: "Gcr-prompter", exe: "/usr/libexec/gcr-prompter", program: "gcr-prompter"),
    .init(instance: "kwalletd5", cls: "kwalletd5", exe: "/usr/bin/kwalletd5", program: "KWallet"),
    .init(
      instance: "kwalletmanager5", cls: "kwalletmanager5", exe: "/usr/bin/kwalletmanager5", program: "KWalletManager"),
    .init(
      instance: "x11-ssh-askpass", cls: "SshAskpass", exe: "/usr/libexec/ssh-askpass/x11-ssh-askpass",
      program: "x11-ssh-askpass"),
    .init(
      instance: "gnome-ssh-askpass", cls: "Gnome-ssh-askpass", exe: "/usr/lib/openssh/gnome-ssh-askpass",
      program: "gnome-ssh-askpass"),
    .init(instance: "ksshaskpass", cls: "ksshaskpass", exe: "/usr/bin/ksshaskpass", program: "ksshaskpass"),
    .init(
      instance: "ssh-askpass-fullscreen", cls: "Ssh-askpass-fullscreen", exe: "/usr/bin/ssh-askpass-fullscreen",
      program: "ssh-askpass-fullscreen"),
    .init(instance: "lxpolkit", cls: "Lxpolkit", exe: "/usr/bin/lxpolkit", program: "lxpolkit"),
  ]

  /// The polkit agents (not run: no system bus here) by the executable their package installs.
  static let notRun: [(exe: String, program: String)] = [
    ("/usr/lib/policykit-1-gnome/polkit-gnome-authentication-agent-1", "polkit-gnome"),
    ("/usr/libexec/polkit-mate-authentication-agent-1", "polkit-mate"),
    ("/usr/bin/lxqt-policykit-agent", "lxqt-policykit"),
    ("/usr/lib/x86_64-linux-gnu/libexec/polkit-kde-authentication-agent-1", "polkit-kde"),
    ("/usr/libexec/gcr-ssh-askpass", "gcr-ssh-askpass"),
  ]

  @Test("a window as the real program sets it is secure by its built-in rule", arguments: seen)
  func seenWindowIsSecure(_ w: SeenWindow) {
    #expect(Policy().secureReason(facts: w.facts, tag: .absent) == .builtin(name: w.program))
    #expect(PolicyLoader.merge([]).secureReason(facts: w.facts, tag: .absent) == .builtin(name: w.program))
  }

  @Test("its class alone (the client's executable unknown) or its exe alone is enough where both are rules")
  func eitherFactIsEnough() {
    for w in Self.seen {
      let program = Policy.builtinSecurePrograms.first { $0.name == w.program }!
      if program.windowClass != nil {
        #expect(Policy().secureReason(facts: Facts(class: w.cls), tag: .absent) == .builtin(name: w.program), "\(w)")
      }
      if program.exe != nil {
        // Another client rewrote its WM_CLASS: the exe rule still holds.
        let facts = Facts(class: "Rewritten", instance: "x", exe: w.exe)
        #expect(Policy().secureReason(facts: facts, tag: .absent) == .builtin(name: w.program), "\(w)")
      }
    }
  }

  @Test("a polkit agent (not run) is secure by its executable", arguments: notRun.map(\.exe))
  func notRunAgentIsSecure(_ exe: String) {
    let program = Self.notRun.first { $0.exe == exe }!.program
    #expect(Policy().secureReason(facts: Facts(exe: exe), tag: .absent) == .builtin(name: program))
  }

  @Test(
    "look-alikes are not secure",
    arguments: [
      Facts(class: "FLTK", instance: "FLTK", exe: "/usr/bin/fluid"),  // FLTK's class is every FLTK app's
      Facts(class: "Mono", exe: "/usr/bin/mono-sgen"),  // mono runs other programs too
      Facts(class: "keepassxc", exe: "/usr/bin/keepassxc-cli"),  // class is case-sensitive; not its exe
      Facts(class: "XTerm", instance: "xterm", exe: "/usr/bin/xterm"),
      Facts(class: "Pinentry", exe: "/usr/bin/pinentry-curses"),
      Facts(),
    ])
  func lookAlikesAreNotSecure(_ f: Facts) {
    #expect(Policy().secureReason(facts: f, tag: .absent) == SecureReason.none)
  }

  @Test("every listed program has a rule, a unique name, and a row in docs/policy.md")
  func listIsWellFormed() throws {
    let programs = Policy.builtinSecurePrograms
    #expect(Set(programs.map(\.name)).count == programs.count)
    #expect(programs.allSatisfy { !$0.matchers.isEmpty })
    #expect(Policy.defaultSecure.count == programs.reduce(0) { $0 + $1.matchers.count })
    #expect(Policy.defaultSecure.allSatisfy { $0.location == nil && $0.title == nil })
    let docs = try String(contentsOfFile: "docs/policy.md", encoding: .utf8)
    for p in programs {
      if let exe = p.exe { #expect(docs.contains(exe), "docs/policy.md names \(exe)") }
      if let c = p.windowClass { #expect(docs.contains("`\(c)`"), "docs/policy.md names class \(c)") }
      #expect(docs.contains("| \(p.package) |") || docs.contains(p.package), "docs/policy.md names \(p.package)")
    }
  }

  @Test("the files' rules come first: a window both match is reported under the file's rule")
  func userRulesComeFirst() throws {
    let policy = PolicyLoader.merge([try parse(#"{version: 1, secure: [{name: "vault", class: "KeePassXC"}]}"#)])
    let f = Self.seen[0].facts
    #expect(policy.secureReason(facts: f, tag: .absent) == .rule(index: 0, label: #""vault" (t.json5:1:23)"#))
    let lines = policy.explainWindow(facts: f, tag: .absent).lines
    #expect(
      lines.contains {
        $0.hasPrefix("built-in: KeePassXC") && $0.hasSuffix("matches, but an earlier rule already decided")
      })
    // A window no file rule matches falls to the built-in list.
    let pin = Self.seen[2].facts
    #expect(policy.secureReason(facts: pin, tag: .absent) == .builtin(name: "pinentry-gtk-2"))
  }

  @Test("explain names the built-in rule that matched")
  func explainNamesTheBuiltInRule() {
    let x = Policy().explainWindow(facts: Self.seen[0].facts, tag: .absent)
    let n = Policy.defaultSecure.count
    #expect(
      x.lines == [
        "tag: none",
        "rules: none",
        #"built-in: KeePassXC (built-in rule 1 of \#(n)): exe = "*/keepassxc" (is "/usr/bin/keepassxc") -> MATCH -> secure"#,
        #"built-in: KeePassXC (built-in rule 2 of \#(n)): class = "KeePassXC" (is "KeePassXC") -> matches, but an earlier rule already decided"#,
        "decision: SECURE (built-in: KeePassXC)",
      ])
    // The exe rule holds: no note about the class rule.
    #expect(x.rewritableNotes.isEmpty)
    let none = Policy().explainWindow(facts: Facts(class: "XTerm"), tag: .absent)
    #expect(none.lines.contains("built-in rules: \(n) (password managers and credential prompts), none matches"))
    // By class alone: the note says another client can take the window out of it.
    let byClass = Policy().explainWindow(facts: Facts(class: "KeePassXC"), tag: .absent)
    #expect(byClass.rewritableNotes.count == 1)
    #expect(byClass.rewritableNotes.first?.hasPrefix("note: built-in: KeePassXC looks at class") == true)
  }

  @Test(
    "replaceDefaultSecure: parsed, merged (the last file that sets it decides), drops the list",
    arguments: [
      ([], true),
      (["{version: 1}"], true),
      (["{version: 1, replaceDefaultSecure: false}"], true),
      (["{version: 1, replaceDefaultSecure: true}"], false),
      (["{version: 1, replaceDefaultSecure: true}", "{version: 1}"], false),
      (["{version: 1, replaceDefaultSecure: true}", "{version: 1, replaceDefaultSecure: false}"], true),
      (["{version: 1, replaceDefaultSecure: false}", "{version: 1, replaceDefaultSecure: true}"], false),
    ])
  func replaceDefaultSecure(_ c: ([String], Bool)) throws {
    let policy = PolicyLoader.merge(try c.0.map(parse))
    #expect((policy.builtinSecure == Policy.defaultSecure) == c.1)
    #expect(policy.builtinSecure.isEmpty == !c.1)
    let kp = Self.seen[0].facts
    #expect(policy.secureReason(facts: kp, tag: .absent).isSecure == c.1)
    #expect(policy.clientMayOwnSecureWindows(Facts(exe: "/usr/bin/keepassxc")) == c.1)
  }

  @Test("the parser checks the key's type; unknown keys near it stay errors")
  func parserErrors() {
    #expect(
      diagnostics(#"{version: 1, replaceDefaultSecure: "yes"}"#) == [
        #"t.json5:1:36: error: 'replaceDefaultSecure' must be a boolean (true or false), not a string"#
      ])
    let unknown = diagnostics("{version: 1, replaceDefaultSecures: true}")
    #expect(unknown.count == 1)
    #expect(unknown.first?.contains("unknown key 'replaceDefaultSecures' at top level") == true, "\(unknown)")
    // Not a key of `capture` (it is top level).
    #expect(diagnostics("{version: 1, capture: {replaceDefaultSecure: true}}").first?.contains("unknown key") == true)
  }

  @Test("the engine shields a built-in program's window with no policy file, and not with the list dropped")
  func engineDecides() {
    let app = ClientID(0x0040_0000)
    let id = ClientIdentity(pid: 7, exe: "/usr/bin/pinentry-gtk-2", comm: "pinentry-gtk-2", uid: 1000)
    for dropped in [false, true] {
      var p = Policy()
      p.when = .always
      if dropped { p.builtinSecure = [] }
      var e = Engine(policy: p)
      _ = e.handle(.clientConnected(app, id), now: .seconds(0))
      let info = WindowInfo(
        id: 0x0040_0001, client: app, facts: Facts(class: "Pinentry-gtk-2", instance: "pinentry-gtk-2"))
      _ = e.handle(.windowAppeared(info), now: .seconds(1))
      #expect(e.windows[0x0040_0001]?.reason == (dropped ? SecureReason.none : .builtin(name: "pinentry-gtk-2")))
      #expect(e.shielded.contains(0x0040_0001) == !dropped)
    }
  }
}
