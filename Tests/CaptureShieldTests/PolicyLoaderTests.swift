import Foundation
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// A fresh temporary directory, removed by `cleanup`.
private struct TempDir {
  let url: URL
  init() throws {
    url = FileManager.default.temporaryDirectory
      .appendingPathComponent("policy-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }
  func path(_ name: String) -> String { url.appendingPathComponent(name).path }
  @discardableResult
  func write(_ name: String, _ text: String, mode: Int = 0o644) throws -> String {
    let p = path(name)
    try FileManager.default.createDirectory(
      atPath: (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try Data(text.utf8).write(to: URL(fileURLWithPath: p))
    try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: p)
    return p
  }
  func cleanup() { try? FileManager.default.removeItem(at: url) }
}

/// Policy files merged in order and loaded from disk (`PolicyLoader`).
@Suite struct PolicyLoaderTests {
  // MARK: - Merging

  /// `capture.hold` as written → the merged policy's value (absent: the default).
  static let holdCases: [(String?, CaptureHold)] = [
    (nil, .connected), (#""connected""#, .connected), (#""10m""#, .duration(.seconds(600))),
    (#""0s""#, .duration(.seconds(0))), (#""2.5s""#, .duration(.milliseconds(2500))),
  ]

  @Test(arguments: PolicyLoaderTests.holdCases)
  func holdValues(_ written: String?, _ expected: CaptureHold) throws {
    let capture = written.map { "capture: { hold: \($0) }," } ?? ""
    let file = try parseOK("{ version: 1, \(capture) }")
    #expect(PolicyLoader.merge([file]).hold == expected)
  }

  @Test func laterFilesHoldWins() throws {
    let system = try parseOK(#"{ version: 1, capture: { hold: "10m" } }"#, path: "/etc/10.json5")
    let silent = try parseOK(#"{ version: 1, capture: { linger: "1s" } }"#, path: "/etc/20.json5")
    let user = try parseOK(#"{ version: 1, capture: { hold: "connected" } }"#, path: "/home/u/policy.json5")
    #expect(PolicyLoader.merge([system, silent]).hold == .duration(.seconds(600)))
    #expect(PolicyLoader.merge([system, silent, user]).hold == .connected)
    #expect(CaptureHold.duration(.seconds(600)).description == "600s")
    #expect(CaptureHold.connected.description == "connected")
  }

  @Test func mergeConcatenatesListsAndLaterScalarsWin() throws {
    let system = try parseOK(
      """
      {
        version: 1,
        secure: [{ class: "A" }],
        capture: { allow: [{ comm: "a" }], linger: "1s", quarantine: "5s" },
        shield: { when: "always", label: "system" },
        clipboard: { deny: [{ comm: "x" }], selections: ["PRIMARY"], maxReads: 2 },
      }
      """, path: "/etc/10.json5")
    let user = try parseOK(
      """
      {
        version: 1,
        secure: [{ class: "B" }],
        capture: { allow: [{ comm: "b" }], linger: "3s", quarantine: "off", quarantineOnLaunch: false },
        shield: { failMode: "open" },
        clipboard: { deny: [{ comm: "y" }], enabled: false },
      }
      """, path: "/home/u/policy.json5")
    let p = PolicyLoader.merge([system, user])
    #expect(p.sources == ["/etc/10.json5", "/home/u/policy.json5"])
    #expect(p.secure.map { $0.class?.source } == ["A", "B"])
    #expect(p.secure.map { $0.location?.file } == ["/etc/10.json5", "/home/u/policy.json5"])
    #expect(p.captureAllow.map { $0.comm?.source } == ["a", "b"])
    #expect(p.clipboard.deny.map { $0.comm?.source } == ["x", "y"])
    #expect(p.linger == .seconds(3))
    #expect(p.quarantine == nil)  // "off" in the later file overrides 5s
    #expect(!p.quarantineOnLaunch)
    #expect(p.when == .always)  // set only by the first file
    #expect(p.failMode == .open)  // the later file's, over the default (closed)
    #expect(p.label == "system")
    #expect(p.clipboard.selections == ["PRIMARY"])
    #expect(p.clipboard.maxReads == 2)
    #expect(p.clipboard.enabled == false)

    // The other order: scalars follow the later file, lists the load order.
    let q = PolicyLoader.merge([user, system])
    #expect(q.secure.map { $0.class?.source } == ["B", "A"])
    #expect(q.linger == .seconds(1))
    #expect(q.quarantine == .seconds(5))
    #expect(!q.quarantineOnLaunch)  // set only by `user`: the default (true) never overrides
  }

  @Test("shields fail closed by default: a policy without shield.failMode keeps them up when the daemon dies")
  func failModeDefaultsToClosed() throws {
    #expect(Policy().failMode == .closed)
    let p = PolicyLoader.merge([try parseOK("{ version: 1, shield: { when: \"always\" } }", path: "/p.json5")])
    #expect(p.failMode == .closed)
  }

  @Test func mergeOfNothingIsTheDefaultPolicy() {
    #expect(PolicyLoader.merge([]) == Policy())
  }

  struct KnownCase: Sendable, CustomTestStringConvertible {
    var name: String
    var files: [String]
    var expectDefaults: Bool
    var expectedExtra: [String]
    var testDescription: String { name }
  }

  @Test(arguments: [
    KnownCase(
      name: "append by default", files: [#"{version: 1, capture: {known: [{comm: "rec"}]}}"#],
      expectDefaults: true, expectedExtra: ["rec"]),
    KnownCase(
      name: "replace", files: [#"{version: 1, capture: {known: [{comm: "rec"}], replaceDefaultKnown: true}}"#],
      expectDefaults: false, expectedExtra: ["rec"]),
    KnownCase(
      name: "replace in a later file drops only the defaults",
      files: [
        #"{version: 1, capture: {known: [{comm: "a"}]}}"#,
        #"{version: 1, capture: {known: [{comm: "b"}], replaceDefaultKnown: true}}"#,
      ],
      expectDefaults: false, expectedExtra: ["a", "b"]),
    KnownCase(
      name: "a later false overrides an earlier true",
      files: [
        #"{version: 1, capture: {replaceDefaultKnown: true}}"#,
        #"{version: 1, capture: {known: [{comm: "b"}], replaceDefaultKnown: false}}"#,
      ],
      expectDefaults: true, expectedExtra: ["b"]),
  ])
  func defaultKnownCapturers(_ c: KnownCase) throws {
    let files = try c.files.enumerated().map { try parseOK($1, path: "f\($0).json5") }
    let known = PolicyLoader.merge(files).captureKnown
    let defaults = c.expectDefaults ? Policy.defaultKnownCapturers : []
    #expect(Array(known.prefix(defaults.count)) == defaults)
    #expect(known.dropFirst(defaults.count).map { $0.comm?.source } == c.expectedExtra)
  }

  // MARK: - Loading files

  @Test func refusesWorldWritableFile() throws {
    let dir = try TempDir()
    defer { dir.cleanup() }
    let path = try dir.write("policy.json5", "{ version: 1 }", mode: 0o666)
    do {
      _ = try PolicyLoader.load(paths: [path])
      Issue.record("a world-writable file was accepted")
    } catch {
      #expect(
        error.description
          == "\(path):1:1: error: refusing policy file writable by other users (mode 0666); run chmod o-w \(path)")
    }
    try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
    #expect(try PolicyLoader.load(paths: [path]).sources == [path])
  }

  @Test func loadReportsEveryFileAndMerges() throws {
    let dir = try TempDir()
    defer { dir.cleanup() }
    let good1 = try dir.write("a.json5", #"{ version: 1, secure: [{ class: "A" }], capture: { linger: "1s" } }"#)
    let good2 = try dir.write("b.json5", #"{ version: 1, secure: [{ class: "B" }] }"#)
    let bad = try dir.write("bad.json5", "{ version: 1, secure: [{}] }")
    let missing = dir.path("missing.json5")
    let big = try dir.write("big.json5", String(repeating: " ", count: PolicyLoader.maxFileSize) + "{}")
    let binary = dir.path("binary.json5")
    try Data([0x7B, 0x0A, 0x20, 0xFF, 0x7D]).write(to: URL(fileURLWithPath: binary))

    let policy = try PolicyLoader.load(paths: [good1, good2])
    #expect(policy.sources == [good1, good2])
    #expect(policy.secure.map { $0.class?.source } == ["A", "B"])
    #expect(policy.linger == .seconds(1))

    do {
      _ = try PolicyLoader.load(paths: [good1, bad, missing, big, binary, dir.url.path])
      Issue.record("bad files were accepted")
    } catch {
      #expect(
        error.diagnostics.map(\.description) == [
          "\(bad):1:24: error: empty matcher: give at least one of class, instance, title, exe, comm, pid, uid",
          "\(missing):1:1: error: cannot read: No such file or directory",
          "\(big):1:1: error: refusing policy file larger than 1 MiB (\(PolicyLoader.maxFileSize + 2) bytes)",
          "\(binary):2:2: error: the file is not valid UTF-8",
          "\(dir.url.path):1:1: error: cannot read: is a directory",
        ])
    }
  }

  @Test func defaultPathsFindsSystemThenUserFiles() throws {
    let dir = try TempDir()
    defer { dir.cleanup() }
    let etc = dir.path("etc")
    try dir.write("etc/20-b.json5", "{}")
    try dir.write("etc/10-a.json5", "{}")
    try dir.write("etc/notes.txt", "{}")
    try dir.write("etc/.hidden.json5", "{}")
    try FileManager.default.createDirectory(atPath: dir.path("etc/30-dir.json5"), withIntermediateDirectories: true)
    try dir.write("xdg/captureshield/policy.json5", "{}")
    try dir.write("home/.config/captureshield/policy.json5", "{}")

    let system = [dir.path("etc/10-a.json5"), dir.path("etc/20-b.json5")]
    #expect(
      PolicyLoader.defaultPaths(
        environment: ["XDG_CONFIG_HOME": dir.path("xdg"), "HOME": dir.path("home")], systemDirectory: etc)
        == system + [dir.path("xdg/captureshield/policy.json5")])
    #expect(
      PolicyLoader.defaultPaths(environment: ["HOME": dir.path("home")], systemDirectory: etc)
        == system + [dir.path("home/.config/captureshield/policy.json5")])
    #expect(
      PolicyLoader.defaultPaths(
        environment: ["XDG_CONFIG_HOME": "relative", "HOME": dir.path("home")], systemDirectory: etc)
        == system + [dir.path("home/.config/captureshield/policy.json5")])
    #expect(PolicyLoader.defaultPaths(environment: ["HOME": dir.path("nobody")], systemDirectory: etc) == system)
    #expect(PolicyLoader.defaultPaths(environment: [:], systemDirectory: dir.path("none")) == [])
  }
}
