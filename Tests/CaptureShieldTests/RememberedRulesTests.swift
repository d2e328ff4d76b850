// The remembered rules (`shieldctl tag --remember`): the managed file's content, adding
// and removing an application idempotently, where the file loads, and that a broken file
// never turns protection off and is reported.

import Foundation
import Testing

@testable import CaptureShieldCore

private let keepass = RememberedApp(name: "KeePassXC", class: "KeePassXC", exe: "/usr/bin/keepassxc")
private let keepassFacts = Facts(class: "KeePassXC", instance: "keepassxc", exe: "/usr/bin/keepassxc")

/// A fresh directory, removed by the caller.
private func temporaryDirectory() throws -> String {
  let path = NSTemporaryDirectory() + "remembered-\(UUID().uuidString)"
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

@Suite struct RememberedRulesTests {
  @Test func renderedFileParsesWithNamedRules() throws {
    let text = RememberedRules.render([keepass])
    let file = try PolicyParser.parse(text, path: "remembered.json5")
    let rules = try #require(file.secure)
    #expect(rules.count == 2)
    #expect(rules.allSatisfy { $0.name == "remembered: KeePassXC" })
    #expect(rules.contains { $0.exe?.source == "/usr/bin/keepassxc" && $0.class == nil })
    #expect(rules.contains { $0.class?.source == "KeePassXC" && $0.exe == nil })
    #expect(text.hasPrefix("// Managed by shieldctl"))
    // read back: the same application
    #expect(try RememberedRules.parse(text, path: "remembered.json5") == [keepass])
  }

  @Test func emptyListIsAValidFile() throws {
    let text = RememberedRules.render([])
    #expect(try PolicyParser.parse(text, path: "r.json5").secure?.isEmpty == true)
    #expect(try RememberedRules.parse(text, path: "r.json5").isEmpty)
  }

  @Test func ruleMakesTheAppSecureAndExplainNamesIt() throws {
    let file = try PolicyParser.parse(RememberedRules.render([keepass]), path: "remembered.json5")
    var policy = PolicyLoader.merge([file])
    policy.builtinSecure = []  // so the remembered rule is the only one that can match
    let reason = policy.secureReason(facts: Facts(exe: "/usr/bin/keepassxc"), tag: .absent)
    #expect(reason.description.contains("\"remembered: KeePassXC\""))
    #expect(policy.secureReason(facts: Facts(class: "KeePassXC"), tag: .absent).isSecure)
    #expect(!policy.secureReason(facts: Facts(class: "Other", exe: "/usr/bin/other"), tag: .absent).isSecure)
    let lines = policy.explainWindow(facts: keepassFacts, tag: .absent).lines
    #expect(lines.contains { $0.hasPrefix("decision: SECURE") && $0.contains("remembered: KeePassXC") })
  }

  @Test func wildcardsAndRegexLookalikesAreLiteral() throws {
    let odd = RememberedApp(name: "a\"b", class: "/Weird*[x]?/", exe: "/opt/a b/\\run*")
    let text = RememberedRules.render([odd])
    var policy = PolicyLoader.merge([try PolicyParser.parse(text, path: "r.json5")])
    policy.builtinSecure = []
    #expect(policy.secureReason(facts: Facts(class: "/Weird*[x]?/"), tag: .absent).isSecure)
    #expect(!policy.secureReason(facts: Facts(class: "/WeirdXXx!/"), tag: .absent).isSecure)
    #expect(policy.secureReason(facts: Facts(exe: "/opt/a b/\\run*"), tag: .absent).isSecure)
    #expect(!policy.secureReason(facts: Facts(exe: "/opt/a b/\\running"), tag: .absent).isSecure)
    #expect(try RememberedRules.parse(text, path: "r.json5") == [odd])
  }

  @Test func addingIsIdempotent() {
    let once = RememberedRules.adding(keepass, to: [])
    #expect(once == [keepass])
    #expect(RememberedRules.adding(keepass, to: once) == once)
    #expect(RememberedRules.render(RememberedRules.adding(keepass, to: once)) == RememberedRules.render(once))
    let other = RememberedApp(name: "Xmessage", class: "Xmessage", exe: "/usr/bin/xmessage")
    #expect(RememberedRules.adding(other, to: once) == [keepass, other])
  }

  @Test func removingIsIdempotentAndByClassOrProgram() {
    let other = RememberedApp(name: "Xmessage", class: "Xmessage", exe: "/usr/bin/xmessage")
    let apps = [keepass, other]
    // a window of the same program whose class was rewritten still finds it
    let (kept, removed) = RememberedRules.removing(
      covering: Facts(class: "Renamed", exe: "/usr/bin/keepassxc"), from: apps)
    #expect(kept == [other])
    #expect(removed == [keepass])
    let again = RememberedRules.removing(covering: keepassFacts, from: kept)
    #expect(again.kept == [other])
    #expect(again.removed.isEmpty)
  }

  @Test func appFromFacts() {
    #expect(RememberedApp(facts: keepassFacts) == keepass)
    #expect(RememberedApp(facts: Facts(exe: "/usr/bin/xeyes"))?.name == "xeyes")
    #expect(RememberedApp(facts: Facts(class: "Remote")) == RememberedApp(name: "Remote", class: "Remote", exe: nil))
    #expect(RememberedApp(facts: Facts(title: "only a title", pid: 3)) == nil)
    #expect(RememberedApp(facts: Facts(class: "", exe: "")) == nil)
  }

  @Test func handEditedFileIsNotRewritten() {
    let extraRule = """
      { version: 1, secure: [ {name: "remembered: A", class: "A"}, {name: "mine", title: "*Bank*"} ] }
      """
    #expect(throws: RememberedRules.Problem.self) { try RememberedRules.parse(extraRule, path: "r.json5") }
    let setting = """
      { version: 1, secure: [], shield: {when: "always"} }
      """
    #expect(throws: RememberedRules.Problem.self) { try RememberedRules.parse(setting, path: "r.json5") }
    #expect(throws: RememberedRules.Problem.self) {
      try RememberedRules.parse("{ version: 1, secure: [", path: "r.json5")
    }
  }

  @Test func pathIsNextToTheUsersPolicy() {
    #expect(
      RememberedRules.path(environment: ["XDG_CONFIG_HOME": "/c"]) == "/c/captureshield/remembered.json5")
    #expect(RememberedRules.path(environment: ["HOME": "/h"]) == "/h/.config/captureshield/remembered.json5")
    #expect(RememberedRules.path(environment: ["XDG_CONFIG_HOME": "relative"]) == nil)
  }

  @Test func loadedAfterTheUsersFile() throws {
    let dir = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let env = ["XDG_CONFIG_HOME": dir]
    try FileManager.default.createDirectory(atPath: dir + "/captureshield", withIntermediateDirectories: true)
    let user = try #require(PolicyLoader.userPath(environment: env))
    let remembered = try #require(RememberedRules.path(environment: env))
    try RememberedRules.render([keepass]).write(toFile: remembered, atomically: true, encoding: .utf8)
    #expect(PolicyLoader.defaultPaths(environment: env, systemDirectory: dir + "/none") == [remembered])
    try "{version: 1, secure: [{name: \"mine\", class: \"KeePassXC\"}]}".write(
      toFile: user, atomically: true, encoding: .utf8)
    let paths = PolicyLoader.defaultPaths(environment: env, systemDirectory: dir + "/none")
    #expect(paths == [user, remembered])
    let policy = try PolicyLoader.load(paths: paths)
    // the user's own rule comes first, so it is the one named
    #expect(policy.secureReason(facts: keepassFacts, tag: .absent).description.contains("\"mine\""))
    #expect(policy.secure.count == 3)
  }

  @Test func brokenRememberedFileNeverTurnsProtectionOffAndIsReported() throws {
    let dir = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let user = dir + "/policy.json5"
    let remembered = dir + "/remembered.json5"
    try "{version: 1, secure: [{name: \"bank\", title: \"*Bank*\"}]}".write(
      toFile: user, atomically: true, encoding: .utf8)
    try "{version: 1, secure: [ {name: \"remembered: A\", klass: \"A\"} ".write(
      toFile: remembered, atomically: true, encoding: .utf8)
    // loaded strictly (a reload), it is rejected: the last good policy stays in force
    #expect(throws: PolicyError.self) { try PolicyLoader.load(paths: [user, remembered]) }
    // at start-up, the rest still protects and the problem is returned to report
    let loaded = try PolicyLoader.load(paths: [user, remembered], optional: remembered)
    #expect(loaded.policy.sources == [user])
    #expect(loaded.policy.secureReason(facts: Facts(title: "My Bank"), tag: .absent).isSecure)
    #expect(loaded.policy.secureReason(facts: keepassFacts, tag: .absent).isSecure)  // built-in list kept
    let skipped = try #require(loaded.skipped)
    #expect(skipped.description.contains("remembered.json5"))
    // a broken file of the user's own is still an error, as before
    #expect(throws: PolicyError.self) { try PolicyLoader.load(paths: [remembered, user], optional: user) }
    // and doctor reports the broken file as a problem
    let findings = Diagnosis.secureSources(
      policy: loaded.policy, daemon: nil, rememberedProblem: skipped.description)
    #expect(findings.contains { $0.check == "remembered rules" && $0.level == .problem })
  }

  @Test func doctorSaysWhatIsSecureByWhat() throws {
    let file = try PolicyParser.parse(RememberedRules.render([keepass]), path: "remembered.json5")
    let policy = PolicyLoader.merge([file])
    let findings = Diagnosis.secureSources(policy: policy, daemon: nil, rememberedProblem: nil)
    let byCheck = Dictionary(uniqueKeysWithValues: findings.map { ($0.check, $0) })
    #expect(byCheck["secure by default"]?.text.contains("\(Policy.defaultSecure.count) built-in rules") == true)
    #expect(byCheck["secure by your rules"]?.text.contains("2 rules of the policy files, 2 of them remembered") == true)
    #expect(byCheck["remembered rules"] == nil)
    #expect(findings.allSatisfy { $0.level != .problem })
  }
}
