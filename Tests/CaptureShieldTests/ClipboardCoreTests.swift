import Foundation
import Testing

@testable import CaptureShield

// MARK: - Fixtures

private func t(_ seconds: Double) -> MonotonicTime { .seconds(seconds) }
private func pat(_ s: String) -> Pattern { try! Pattern.parse(s) }

private let keepass = ClientID(0x40_0000)
private let editor = ClientID(0x60_0000)
private let manager = ClientID(0x80_0000)
private let keepassID = ClientIdentity(pid: 100, exe: "/usr/bin/keepassxc", comm: "keepassxc", uid: 1000)
private let editorID = ClientIdentity(pid: 200, exe: "/usr/bin/gedit", comm: "gedit", uid: 1000)
private let copyqID = ClientIdentity(pid: 300, exe: "/usr/bin/copyq", comm: "copyq", uid: 1000)

/// A core guarding `size` bytes copied from the secure KeePassXC at t=1.
private func guardedCore(_ p: ClipboardPolicy = ClipboardPolicy(), selection: String = "CLIPBOARD") -> ClipboardCore {
  var c = ClipboardCore(policy: p)
  _ = c.handle(
    .ownerChanged(selection: selection, owner: keepass, identity: keepassID, secureSource: true, facts: []), now: t(1))
  _ = c.handle(.contentTaken(selection: selection, size: 12), now: t(1.01))
  return c
}

/// A request into a window of `reader`'s (0x...0001), sent by `sender` (default: the reader itself).
private func read(
  _ c: inout ClipboardCore, id: UInt64 = 1, reader: ClientID = editor, identity: ClientIdentity? = editorID,
  focused: Bool, target: ClipboardCore.Target = .text, sender: ClipboardCore.Sender? = nil, at time: Double = 2
) -> [ClipboardCore.Effect] {
  c.handle(
    .request(
      id: id, selection: "CLIPBOARD", reader: reader, identity: identity, focused: focused, target: target,
      requestor: reader.base + 1, sender: sender ?? .recorded(reader, identity)),
    now: t(time))
}

private func served(_ fx: [ClipboardCore.Effect], id: UInt64 = 1) -> Bool? {
  for e in fx {
    if e == .serve(id: id) { return true }
    if e == .refuse(id: id) { return false }
  }
  return nil
}

private func audits(_ fx: [ClipboardCore.Effect]) -> [AuditRecord] {
  fx.compactMap { if case .audit(let r) = $0 { r } else { nil } }
}

private func cleared(_ fx: [ClipboardCore.Effect], _ sel: String = "CLIPBOARD") -> Bool {
  fx.contains(.giveUp(selection: sel)) && fx.contains(.wipe(selection: sel))
}

// MARK: - Taking over

@Suite("Clipboard core")
struct ClipboardCoreTests {
  @Test(
    "a copy is taken over only from secure sources or clipboard.sources",
    arguments: [
      (true, [Facts](), true),
      (false, [Facts](), false),
      (false, [Facts(exe: "/usr/bin/keepassxc")], true),
      (false, [Facts(exe: "/usr/bin/gedit")], false),
    ])
  func takeover(secure: Bool, facts: [Facts], expected: Bool) {
    var p = ClipboardPolicy()
    p.sources = [Matcher(exe: pat("*/keepassxc"))]
    var c = ClipboardCore(policy: p)
    let fx = c.handle(
      .ownerChanged(selection: "CLIPBOARD", owner: keepass, identity: keepassID, secureSource: secure, facts: facts),
      now: t(1))
    #expect(fx.contains(.takeOver(selection: "CLIPBOARD")) == expected)
    #expect((c.guarded["CLIPBOARD"] != nil) == expected)
  }

  @Test("content taken: become owner, one audit record with source and size, never text")
  func contentTaken() {
    var c = ClipboardCore(policy: ClipboardPolicy())
    _ = c.handle(
      .ownerChanged(selection: "PRIMARY", owner: keepass, identity: keepassID, secureSource: true, facts: []), now: t(1)
    )
    let fx = c.handle(.contentTaken(selection: "PRIMARY", size: 42), now: t(1.01))
    #expect(fx.first == .becomeOwner(selection: "PRIMARY"))
    let a = audits(fx)
    #expect(a.count == 1)
    #expect(a[0].event == "clipboard-guard")
    #expect(a[0]["size"] == .int(42))
    #expect(a[0]["exe"] == .string("/usr/bin/keepassxc"))
    #expect(c.guarded["PRIMARY"]?.isOwned == true)
  }

  @Test("disabled guard or a selection not listed: nothing is taken over", arguments: [true, false])
  func disabled(enabled: Bool) {
    var p = ClipboardPolicy()
    p.enabled = enabled
    p.selections = ["CLIPBOARD"]
    var c = ClipboardCore(policy: p)
    let fx = c.handle(
      .ownerChanged(selection: "PRIMARY", owner: keepass, identity: keepassID, secureSource: true, facts: []), now: t(1)
    )
    #expect(fx.isEmpty)
  }

  @Test("a new copy from a non-secure window wipes the guarded one and is left alone")
  func nonSecureReplaces() {
    var c = guardedCore()
    let fx = c.handle(
      .ownerChanged(selection: "CLIPBOARD", owner: editor, identity: editorID, secureSource: false, facts: []),
      now: t(3))
    #expect(fx.contains(.wipe(selection: "CLIPBOARD")))
    #expect(!fx.contains(.giveUp(selection: "CLIPBOARD")))  // the editor owns it now
    #expect(!fx.contains(.takeOver(selection: "CLIPBOARD")))
    #expect(c.guarded.isEmpty)
  }

  @Test("a failed conversion is audited and nothing stays guarded")
  func failed() {
    var c = ClipboardCore(policy: ClipboardPolicy())
    _ = c.handle(
      .ownerChanged(selection: "CLIPBOARD", owner: keepass, identity: keepassID, secureSource: true, facts: []),
      now: t(1))
    let fx = c.handle(.contentFailed(selection: "CLIPBOARD", reason: "no text"), now: t(2))
    #expect(audits(fx).map(\.event) == ["clipboard-guard-failed"])
    #expect(c.guarded.isEmpty)
  }

  // MARK: Readers

  struct ReaderCase: Sendable, CustomStringConvertible {
    var name: String
    var readers: ClipboardPolicy.ReaderMode = .focused
    var allow: [String] = []
    var deny: [String] = []
    var identity: ClientIdentity
    var focused: Bool
    var served: Bool
    var description: String { name }
  }

  @Test(
    "readers are served by policy",
    arguments: [
      ReaderCase(name: "focused reader served", identity: editorID, focused: true, served: true),
      ReaderCase(name: "background reader refused", identity: copyqID, focused: false, served: false),
      ReaderCase(
        name: "deny wins over focus", deny: ["*/gedit"], identity: editorID, focused: true, served: false),
      ReaderCase(
        name: "deny wins over allow", allow: ["*/copyq"], deny: ["*/copyq"], identity: copyqID, focused: false,
        served: false),
      ReaderCase(name: "allow grants unfocused", allow: ["*/copyq"], identity: copyqID, focused: false, served: true),
      ReaderCase(
        name: "allowlist mode refuses focused non-allowed", readers: .allowList, identity: editorID, focused: true,
        served: false),
      ReaderCase(
        name: "allowlist mode serves allowed", readers: .allowList, allow: ["*/gedit"], identity: editorID,
        focused: false, served: true),
    ])
  func readers(_ k: ReaderCase) {
    var p = ClipboardPolicy()
    p.readers = k.readers
    p.allow = k.allow.map { Matcher(exe: pat($0)) }
    p.deny = k.deny.map { Matcher(exe: pat($0)) }
    var c = guardedCore(p)
    let fx = read(&c, identity: k.identity, focused: k.focused)
    #expect(served(fx) == k.served)
    let a = audits(fx)
    #expect(a.count == 1)
    #expect(a.first?.event == (k.served ? "clipboard-read" : "clipboard-read-refused"))
    #expect(a.first?["exe"] == .string(k.identity.exe!))
    let g = c.guarded["CLIPBOARD"]!
    #expect(g.readsServed == (k.served ? 1 : 0))
    #expect(g.readsRefused == (k.served ? 0 : 1))
  }

  @Test(
    "metadata targets follow the same verdict and are not counted or audited",
    arguments: [ClipboardCore.Target.targets, .hint, .timestamp])
  func metadata(target: ClipboardCore.Target) {
    var c = guardedCore()
    #expect(served(read(&c, id: 1, focused: true, target: target)) == true)
    let fx = read(&c, id: 2, identity: copyqID, focused: false, target: target)
    #expect(served(fx, id: 2) == false)
    #expect(audits(fx).isEmpty)
    #expect(c.guarded["CLIPBOARD"]!.readsServed == 0)
  }

  @Test("requests for a selection not guarded, or unsupported targets, are refused")
  func notGuarded() {
    var c = ClipboardCore(policy: ClipboardPolicy())
    #expect(served(read(&c, focused: true)) == false)
    var g = guardedCore()
    #expect(served(read(&g, focused: true, target: .unsupported)) == false)
  }

  // MARK: Who sent the request

  struct SenderCase: Sendable, CustomStringConvertible {
    var name: String
    var target: ClipboardCore.Target = .text
    var sender: ClipboardCore.Sender
    var served: Bool
    /// The refusal's audit record names this executable (nil: no record).
    var auditedExe: String?
    var refusedCount: Int
    var description: String { name }
  }

  @Test(
    "only the client that owns the requestor window is served, whatever the target; spoofers are audited by name",
    arguments: [
      SenderCase(
        name: "the focused reader itself", sender: .recorded(editor, editorID), served: true,
        auditedExe: "/usr/bin/gedit", refusedCount: 0),
      SenderCase(
        name: "a background client naming the focused window", sender: .recorded(manager, copyqID), served: false,
        auditedExe: "/usr/bin/copyq", refusedCount: 1),
      SenderCase(
        name: "a spoofer without identity", sender: .recorded(manager, nil), served: false, auditedExe: nil,
        refusedCount: 1),
      SenderCase(
        name: "no record of the sender", sender: .unknown(why: "no ConvertSelection recorded"), served: false,
        auditedExe: nil, refusedCount: 1),
      SenderCase(
        name: "spoofed TARGETS", target: .targets, sender: .recorded(manager, copyqID), served: false,
        auditedExe: "/usr/bin/copyq", refusedCount: 0),
      SenderCase(
        name: "spoofed hint", target: .hint, sender: .recorded(manager, copyqID), served: false,
        auditedExe: "/usr/bin/copyq", refusedCount: 0),
      SenderCase(
        name: "spoofed TIMESTAMP", target: .timestamp, sender: .recorded(manager, copyqID), served: false,
        auditedExe: "/usr/bin/copyq", refusedCount: 0),
      SenderCase(
        name: "TARGETS with no record", target: .targets, sender: .unknown(why: "RECORD unavailable"),
        served: false, auditedExe: nil, refusedCount: 0),
    ])
  func senders(_ k: SenderCase) {
    var c = guardedCore()
    let fx = read(&c, focused: true, target: k.target, sender: k.sender)
    #expect(served(fx) == k.served)
    let a = audits(fx)
    if k.served {
      #expect(a.map(\.event) == (k.target == .text ? ["clipboard-read"] : []))
    } else {
      let refused = a.filter { $0.event == "clipboard-read-refused" }
      #expect(refused.count == a.count)
      switch k.sender {
      case .recorded(let who, _):
        // A spoof is audited for every target, naming the sender and the victim.
        #expect(refused.count == 1)
        #expect(refused.first?["reader"] == .string(who.description))
        #expect(refused.first?["requestorClient"] == .string(editor.description))
        #expect(refused.first?["requestor"] == .string("0x600001"))
        #expect(refused.first?["why"] == .string("the requestor window belongs to another client"))
      case .unknown:
        #expect(refused.count == (k.target == .text ? 1 : 0))
        #expect(refused.first?["reader"] == nil)
      }
      #expect(refused.first?["target"] == (refused.isEmpty ? nil : .string(k.target.rawValue)))
    }
    #expect(a.first?["exe"] == k.auditedExe.map { .string($0) })
    #expect(c.guarded["CLIPBOARD"]!.readsRefused == k.refusedCount)
    #expect(c.guarded["CLIPBOARD"]!.readsServed == (k.served && k.target == .text ? 1 : 0))
  }

  @Test("a spoofed request is refused even where policy would serve the requestor (allow, allowList)")
  func spoofBeatsAllow() {
    var p = ClipboardPolicy()
    p.readers = .allowList
    p.allow = [Matcher(exe: pat("*/gedit"))]
    var c = guardedCore(p)
    #expect(served(read(&c, id: 1, focused: true, sender: .recorded(manager, copyqID)), id: 1) == false)
    #expect(served(read(&c, id: 2, focused: false), id: 2) == true)
  }

  // MARK: Clearing

  @Test("maxReads: cleared after N served reads", arguments: [1, 2, 3])
  func maxReads(n: Int) {
    var p = ClipboardPolicy()
    p.maxReads = n
    var c = guardedCore(p)
    for i in 1...n {
      let fx = read(&c, id: UInt64(i), focused: true)
      #expect(served(fx, id: UInt64(i)) == true)
      #expect(cleared(fx) == (i == n))
    }
    #expect(c.guarded.isEmpty)
    #expect(served(read(&c, id: 99, focused: true), id: 99) == false)
  }

  @Test("clearAfter: cleared at the deadline, not before", arguments: [1.0, 30.0])
  func clearAfter(seconds: Double) {
    var p = ClipboardPolicy()
    p.clearAfter = .seconds(seconds)
    var c = guardedCore(p)
    #expect(c.nextDeadline == t(1) + .seconds(seconds))
    #expect(c.handle(.tick, now: t(1 + seconds - 0.1)).isEmpty)
    let fx = c.handle(.tick, now: t(1 + seconds))
    #expect(cleared(fx))
    #expect(audits(fx).first?.event == "clipboard-clear")
    #expect(c.nextDeadline == nil)
  }

  @Test("the clear command and shutdown clear every guarded selection")
  func clearAll() {
    for event in [ClipboardCore.Event.clear(by: "shieldctl (pid 1)"), .shutdown] {
      var c = guardedCore()
      _ = c.handle(
        .ownerChanged(selection: "PRIMARY", owner: keepass, identity: keepassID, secureSource: true, facts: []),
        now: t(1))
      _ = c.handle(.contentTaken(selection: "PRIMARY", size: 3), now: t(1))
      let fx = c.handle(event, now: t(2))
      #expect(cleared(fx, "CLIPBOARD") && cleared(fx, "PRIMARY"))
      #expect(c.guarded.isEmpty)
    }
  }

  @Test(
    "policy reload: disabling, dropping the selection or a lower maxReads clears; else kept",
    arguments: [("disable", true), ("drop", true), ("maxReads", true), ("longer", false)])
  func reload(change: String, clears: Bool) {
    var c = guardedCore()
    _ = read(&c, focused: true)
    var p = ClipboardPolicy()
    switch change {
    case "disable": p.enabled = false
    case "drop": p.selections = ["PRIMARY"]
    case "maxReads": p.maxReads = 1
    default: p.clearAfter = .seconds(60)
    }
    let fx = c.handle(.policyReplaced(p), now: t(3))
    #expect(cleared(fx) == clears)
    #expect(c.policy == p)
  }

  // MARK: The source's own read-back and clear

  struct SourceCase: Sendable, CustomStringConvertible {
    var name: String
    var readers: ClipboardPolicy.ReaderMode = .focused
    var deny: [String] = []
    var reader: ClientID = keepass
    var identity: ClientIdentity? = keepassID
    var sender: ClipboardCore.Sender? = nil
    var target: ClipboardCore.Target = .text
    var served: Bool
    var description: String { name }
  }

  @Test(
    "the source reads back its own copy without the focus; a reused base, a spoofer or another client does not",
    arguments: [
      SourceCase(name: "the source's read-back", served: true),
      SourceCase(name: "the source's TARGETS", target: .targets, served: true),
      SourceCase(name: "the source under readers allowList", readers: .allowList, served: true),
      SourceCase(name: "the source, even if a deny rule names it", deny: ["*/keepassxc"], served: true),
      SourceCase(
        name: "the source's base, reused by another process",
        identity: ClientIdentity(pid: 101, exe: "/usr/bin/keepassxc"), served: false),
      SourceCase(name: "the source's base, no PID", identity: ClientIdentity(exe: "/usr/bin/keepassxc"), served: false),
      SourceCase(
        name: "a spoofer naming the source's window", sender: .recorded(manager, copyqID), served: false),
      SourceCase(
        name: "the source's window, sender unknown", sender: .unknown(why: "no ConvertSelection recorded"),
        served: false),
      SourceCase(name: "another unfocused client", reader: editor, identity: editorID, served: false),
    ])
  func sourceReadsBack(_ k: SourceCase) {
    var p = ClipboardPolicy()
    p.readers = k.readers
    p.deny = k.deny.map { Matcher(exe: pat($0)) }
    var c = guardedCore(p)
    let fx = read(&c, reader: k.reader, identity: k.identity, focused: false, target: k.target, sender: k.sender)
    #expect(served(fx) == k.served)
    let g = c.guarded["CLIPBOARD"]!
    #expect(g.readsServed == 0)  // a read-back is not a read of someone else's
    if k.served && k.target == .text {
      #expect(audits(fx).map(\.event) == ["clipboard-read"])
      #expect(audits(fx).first?["why"] == .string("source reads back its own copy"))
    }
  }

  @Test("the source's read-back does not use up maxReads")
  func sourceReadBackNotCounted() {
    var p = ClipboardPolicy()
    p.maxReads = 1
    var c = guardedCore(p)
    let back = read(&c, id: 1, reader: keepass, identity: keepassID, focused: false)
    #expect(served(back) == true && !cleared(back))
    let paste = read(&c, id: 2, focused: true)
    #expect(served(paste, id: 2) == true && cleared(paste))
  }

  @Test(
    "the source's clear or new copy (an owner change) wipes the guarded copy at once",
    arguments: [
      ("cleared (owner None)", nil as ClientID?, false),
      ("a new copy of the source", keepass, true),
      ("a copy of a plain editor", editor, false),
    ])
  func sourceClears(name: String, owner: ClientID?, guardedAgain: Bool) {
    var c = guardedCore()
    _ = read(&c, id: 1, reader: keepass, identity: keepassID, focused: false)
    let fx = c.handle(
      .ownerChanged(
        selection: "CLIPBOARD", owner: owner, identity: owner == keepass ? keepassID : editorID,
        secureSource: owner == keepass, facts: []),
      now: t(2.5))
    #expect(fx.contains(.wipe(selection: "CLIPBOARD")))
    #expect(!fx.contains(.giveUp(selection: "CLIPBOARD")))  // the owner change already ended ours
    #expect(audits(fx).first?.event == "clipboard-clear")
    #expect(audits(fx).first?["why"] == .string(owner == nil ? "cleared (no owner)" : "replaced by a new copy"))
    #expect(fx.contains(.takeOver(selection: "CLIPBOARD")) == guardedAgain)
    #expect(c.guarded["CLIPBOARD"]?.isOwned != true)
    #expect(served(read(&c, id: 2, focused: true, at: 3), id: 2) == false)
  }

  @Test("an empty copy of the source (how KeePassXC 2.7 clears) is not guarded: the source stays the owner")
  func emptyCopyNotGuarded() {
    var c = guardedCore()
    _ = read(&c, id: 1, reader: keepass, identity: keepassID, focused: false)
    var fx = c.handle(
      .ownerChanged(selection: "CLIPBOARD", owner: keepass, identity: keepassID, secureSource: true, facts: []),
      now: t(10))
    #expect(fx.contains(.wipe(selection: "CLIPBOARD")) && fx.contains(.takeOver(selection: "CLIPBOARD")))
    fx = c.handle(.contentTaken(selection: "CLIPBOARD", size: 0), now: t(10.01))
    #expect(!fx.contains(.becomeOwner(selection: "CLIPBOARD")))
    #expect(fx.contains(.wipe(selection: "CLIPBOARD")))
    #expect(audits(fx).isEmpty)
    #expect(c.guarded.isEmpty && c.nextDeadline == nil)
  }

  // MARK: Status

  @Test(
    "status times come from one clock: the same whenever they are published, whatever the core last handled",
    arguments: [1.01, 2, 5, 26, 29.9])
  func statusOneClock(publishedAt: Double) {
    // Copied (owner change) at t=1, sealed at 1.01; the core handles nothing after that.
    // The shell publishes at monotonic `publishedAt`, when the wall clock reads
    // 1000 + publishedAt: the copy was made at wall 1001 and clears at 1031, always.
    let c = guardedCore()
    let row = c.status(at: t(publishedAt), wallClock: 1000 + publishedAt).guarded[0]
    #expect(abs(row.since - 1001) < 0.001, "since \(row.since)")
    #expect(abs(row.clearsAt! - 1031) < 0.001, "clearsAt \(row.clearsAt!)")
    // What the CLI computes two seconds later (its wall clock minus the published times):
    // the age and the countdown add up to clearAfter.
    let now = 1000 + publishedAt + 2
    #expect(abs((now - row.since) + (row.clearsAt! - now) - 30) < 0.001)
    #expect(abs((now - row.since) - (publishedAt + 1)) < 0.001)
  }

  @Test("status shows source, size and reads, never the text")
  func status() {
    var c = guardedCore()
    _ = read(&c, focused: true)
    _ = read(&c, id: 2, identity: copyqID, focused: false)
    let s = c.status(at: t(2), wallClock: 1000)
    #expect(s.guarded.count == 1)
    let row = s.guarded[0]
    #expect(row.size == 12 && row.readsServed == 1 && row.readsRefused == 1)
    #expect(row.exe == "/usr/bin/keepassxc")
    #expect(abs(row.since - 999) < 0.01)
    #expect(abs(row.clearsAt! - 1029) < 0.01)
  }
}

// MARK: - Sealed text

@Suite("Sealed text")
struct SealedTextTests {
  @Test("round trip", arguments: ["hunter2", "pässwörd 🔑 秘密", "300000 x", ""])
  func roundTrip(text: String) throws {
    let bytes = Array(text == "300000 x" ? String(repeating: "x", count: 300_000).utf8 : text.utf8)
    let box = try bytes.withUnsafeBytes { try SealedText(sealing: $0) }
    #expect(box.size == bytes.count)
    let out = try box.open()
    #expect(Array(out.bytes) == bytes)
    out.wipe()
    #expect(out.count == 0)
  }

  @Test("the box does not hold the plaintext, and after wipe nothing of it is left")
  func wipe() throws {
    let secret = Array("correct horse battery staple".utf8)
    let box = try secret.withUnsafeBytes { try SealedText(sealing: $0) }
    #expect(!contains(box.ownedBytesForTesting, secret))
    let opened = try box.open()
    #expect(contains(Array(UnsafeRawBufferPointer(start: opened.pointer, count: opened.capacity)), secret))
    opened.wipe()
    #expect(UnsafeRawBufferPointer(start: opened.pointer, count: opened.capacity).allSatisfy { $0 == 0 })
    box.wipe()
    #expect(box.ownedBytesForTesting.allSatisfy { $0 == 0 })
    #expect(throws: SealedText.SealError.wiped) { try box.open() }
  }

  @Test("a tampered box does not open", arguments: [0, 5, 20, 40])
  func tampered(index: Int) throws {
    let secret = Array("correct horse battery staple".utf8)
    let box = try secret.withUnsafeBytes { try SealedText(sealing: $0) }
    box.tamperForTesting(at: index)
    #expect(throws: SealedText.SealError.forged) { try box.open() }
  }

  @Test("growing a secure buffer wipes the old one and keeps the bytes")
  func append() throws {
    var b = try #require(SecureBuffer(capacity: 4))
    let a = Array("abcdefghij".utf8)
    a.withUnsafeBytes { #expect(SecureBuffer.append($0, to: &b)) }
    a.withUnsafeBytes { #expect(SecureBuffer.append($0, to: &b)) }
    #expect(Array(b.bytes) == a + a)
  }

  private func contains(_ hay: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= hay.count else { return false }
    return (0...(hay.count - needle.count)).contains { Array(hay[$0..<$0 + needle.count]) == needle }
  }
}

// MARK: - Who sent a ConvertSelection

private let own = ConversionLedger.Own(base: 0x20_0000, markerSelection: 900)
private let clip: UInt32 = 300
private let primary: UInt32 = 301
private let utf8: UInt32 = 400

/// The fields of a conversion into `requestor` (a window of the client of base `requestor & ~0x1fffff`).
private func conv(_ requestor: UInt32, sel: UInt32 = clip, target: UInt32 = utf8, prop: UInt32 = 500, time: UInt32 = 0)
  -> ConversionLedger.Fields
{
  .init(requestor: requestor, selection: sel, target: target, property: prop, time: time)
}

/// ConvertSelection / SetSelectionOwner as a client sends them (little-endian unless `big`).
private func wire(_ opcode: UInt8, _ words: [UInt32], big: Bool = false) -> [UInt8] {
  let length = UInt16(1 + words.count)
  var out: [UInt8] =
    [opcode, 0] + (big ? [UInt8(length >> 8), UInt8(length & 0xff)] : [UInt8(length & 0xff), UInt8(length >> 8)])
  for w in words {
    let b = [UInt8(w & 0xff), UInt8(w >> 8 & 0xff), UInt8(w >> 16 & 0xff), UInt8(w >> 24)]
    out += big ? b.reversed() : b
  }
  return out
}

@Suite("Conversion ledger")
struct ConversionLedgerTests {
  struct DecodeCase: Sendable, CustomStringConvertible {
    var name: String
    var bytes: [UInt8]
    var sender: UInt32
    var big = false
    var expected: ConversionLedger.Recorded?
    var description: String { name }
  }

  @Test(
    "recorded requests decode: others' ConvertSelection; the guard's own SetSelectionOwner and markers",
    arguments: [
      DecodeCase(
        name: "a client's ConvertSelection", bytes: wire(24, [0x60_0001, clip, utf8, 500, 77]), sender: 0x60_0000,
        expected: .conversion(sender: 0x60_0000, conv(0x60_0001, time: 77))),
      DecodeCase(
        name: "big-endian client", bytes: wire(24, [0x60_0001, clip, utf8, 500, 77], big: true), sender: 0x60_0000,
        big: true, expected: .conversion(sender: 0x60_0000, conv(0x60_0001, time: 77))),
      DecodeCase(
        name: "the guard's takeover conversion", bytes: wire(24, [0x20_0001, clip, utf8, 500, 0]), sender: own.base,
        expected: nil),
      DecodeCase(
        name: "the guard's marker", bytes: wire(24, [0x20_0001, 900, 900, 0, 5]), sender: own.base,
        expected: .marker(5)),
      DecodeCase(
        name: "a client converting the marker selection is a conversion", bytes: wire(24, [0x60_0001, 900, 900, 0, 5]),
        sender: 0x60_0000,
        expected: .conversion(sender: 0x60_0000, conv(0x60_0001, sel: 900, target: 900, prop: 0, time: 5))),
      DecodeCase(
        name: "the guard's SetSelectionOwner", bytes: wire(22, [0x20_0001, clip, 0]), sender: own.base,
        expected: .ownerSet(selection: clip)),
      DecodeCase(
        name: "another client's SetSelectionOwner", bytes: wire(22, [0x60_0001, clip, 0]), sender: 0x60_0000,
        expected: nil),
      DecodeCase(
        name: "truncated", bytes: Array(wire(24, [0x60_0001, clip, utf8, 500, 77]).prefix(16)), sender: 0x60_0000,
        expected: nil),
      DecodeCase(name: "another request", bytes: wire(73, [2, 0x60_0001, 0, 0, 0]), sender: 0x60_0000, expected: nil),
    ])
  func decode(_ k: DecodeCase) {
    #expect(ConversionLedger.decode(k.bytes, sender: k.sender, bigEndian: k.big, own: own) == k.expected)
  }

  enum Step: Sendable, Hashable {
    case record(ConversionLedger.Recorded)
    /// The next request: its fields, its marker, what the ledger must say.
    case request(ConversionLedger.Fields, marker: UInt32?, ConversionLedger.Match)
  }

  struct LedgerCase: Sendable, CustomStringConvertible {
    var name: String
    var steps: [Step]
    var description: String { name }
  }

  static let victim: UInt32 = 0x60_0000
  static let attacker: UInt32 = 0x80_0000
  static let victimWindow: UInt32 = 0x60_0001

  @Test(
    "requests are paired with their own records, in order; stale or missing records never vouch",
    arguments: [
      LedgerCase(
        name: "the reader's own request",
        steps: [
          .record(.ownerSet(selection: clip)), .record(.conversion(sender: victim, conv(victimWindow))),
          .request(conv(victimWindow), marker: nil, .sender(victim)),
        ]),
      LedgerCase(
        name: "a spoofer naming the victim's window",
        steps: [
          .record(.ownerSet(selection: clip)), .record(.conversion(sender: attacker, conv(victimWindow))),
          .request(conv(victimWindow), marker: nil, .sender(attacker)),
        ]),
      LedgerCase(
        name: "spoofer and victim with the same fields, either order",
        steps: [
          .record(.conversion(sender: attacker, conv(victimWindow))),
          .record(.conversion(sender: victim, conv(victimWindow))),
          .request(conv(victimWindow), marker: nil, .sender(attacker)),
          .request(conv(victimWindow), marker: nil, .sender(victim)),
          .record(.conversion(sender: victim, conv(victimWindow))),
          .record(.conversion(sender: attacker, conv(victimWindow))),
          .request(conv(victimWindow), marker: nil, .sender(victim)),
          .request(conv(victimWindow), marker: nil, .sender(attacker)),
        ]),
      LedgerCase(
        name: "a victim's request to the previous owner does not vouch for a replay",
        steps: [
          .record(.conversion(sender: victim, conv(victimWindow))),  // went to the app that copied
          .record(.ownerSet(selection: clip)),  // the guard takes over
          .record(.conversion(sender: attacker, conv(victimWindow))),
          .request(conv(victimWindow), marker: nil, .sender(attacker)),
        ]),
      LedgerCase(
        name: "ownership of another selection keeps this one's records",
        steps: [
          .record(.conversion(sender: victim, conv(victimWindow))), .record(.ownerSet(selection: primary)),
          .request(conv(victimWindow), marker: nil, .sender(victim)),
        ]),
      LedgerCase(
        name: "a record that came before the one paired is dropped",
        steps: [
          .record(.conversion(sender: victim, conv(victimWindow, time: 1))),
          .record(.conversion(sender: attacker, conv(victimWindow, time: 2))),
          .request(conv(victimWindow, time: 2), marker: nil, .sender(attacker)),
          .request(conv(victimWindow, time: 1), marker: 1, .pending),
          .record(.marker(1)),
          .request(conv(victimWindow, time: 1), marker: 1, .unrecorded),
        ]),
      LedgerCase(
        name: "no record yet: pending until the marker sent after it",
        steps: [
          .request(conv(victimWindow), marker: nil, .pending),
          .record(.marker(1)),
          .request(conv(victimWindow), marker: 2, .pending),
          .record(.conversion(sender: victim, conv(victimWindow))),
          .request(conv(victimWindow), marker: 2, .sender(victim)),
        ]),
      LedgerCase(
        name: "the marker came and no record: unrecorded; a later record of other fields does not vouch",
        steps: [
          .record(.conversion(sender: victim, conv(victimWindow, target: 401))), .record(.marker(3)),
          .request(conv(victimWindow), marker: 3, .unrecorded),
          .request(conv(victimWindow), marker: 2, .unrecorded),
        ]),
      LedgerCase(
        name: "marker numbers wrap around",
        steps: [
          .record(.marker(UInt32.max)), .request(conv(victimWindow), marker: 1, .pending), .record(.marker(1)),
          .request(conv(victimWindow), marker: 1, .unrecorded),
        ]),
      LedgerCase(
        name: "each record vouches once",
        steps: [
          .record(.conversion(sender: victim, conv(victimWindow))),
          .request(conv(victimWindow), marker: nil, .sender(victim)),
          .request(conv(victimWindow), marker: nil, .pending),
        ]),
    ])
  func ledger(_ k: LedgerCase) {
    var l = ConversionLedger()
    for (i, step) in k.steps.enumerated() {
      switch step {
      case .record(let r): l.add(r)
      case .request(let f, let m, let expected): #expect(l.match(f, marker: m) == expected, "step \(i)")
      }
    }
  }

  @Test("a full ledger drops its oldest records (a request then goes unverified, never served)")
  func capacity() {
    var l = ConversionLedger(capacity: 4)
    for t in 0..<20 { l.add(.conversion(sender: Self.victim, conv(Self.victimWindow, time: UInt32(t)))) }
    #expect(l.entries.count <= 8)
    #expect(l.match(conv(Self.victimWindow, time: 0), marker: nil) == .pending)
    #expect(l.match(conv(Self.victimWindow, time: 19), marker: nil) == .sender(Self.victim))
  }
}
