// The RECORD self-exclusion (`OwnConnections`): which ClientStarted and ClientDied records
// are the daemon's own, and when a killed connection's base becomes a stranger's
// (stale self-exclusion). Tables of steps and the verdicts and exclusions they leave.

import Testing

@testable import CaptureShield

private let main: UInt32 = 0x20_0000
private let shield: UInt32 = 0x40_0000
private let stranger: UInt32 = 0x60_0000

/// One step: the owner's calls, or a record and the verdict it must get.
enum OwnStep: Sendable {
  case insert(UInt32)
  case insertNew(UInt32)
  case closed(UInt32)
  case started(UInt32, OwnConnections.Verdict)
  case died(UInt32, OwnConnections.Verdict)
}

struct OwnConnectionsCase: CustomTestStringConvertible, Sendable {
  let name: String
  let steps: [OwnStep]
  /// The excluded bases after the steps.
  let excluded: Set<UInt32>
  var testDescription: String { name }
}

private let cases: [OwnConnectionsCase] = [
  .init(
    name: "a stranger's records are reported", steps: [.started(stranger, .foreign), .died(stranger, .foreign)],
    excluded: [main, shield]),
  .init(
    name: "our killed connection's death frees its base; the next holder is a stranger",
    steps: [.died(shield, .ourConnectionDied), .started(shield, .foreign)], excluded: [main]),
  .init(
    name: "noticed first: the death record is still ours, then the base is free",
    steps: [.closed(shield), .died(shield, .ourConnectionDied), .started(shield, .foreign)], excluded: [main]),
  .init(
    name: "noticed first and reconnected on the same base: our new connection stays excluded",
    steps: [
      .closed(shield), .insertNew(shield), .died(shield, .ours), .started(shield, .ours),
    ], excluded: [main, shield]),
  .init(
    name: "death read first, reconnected on the same base: its start is ours",
    steps: [.died(shield, .ourConnectionDied), .insertNew(shield), .started(shield, .ours)], excluded: [main, shield]),
  .init(
    name: "reconnected on a base a stranger left just before: the stranger's death is reported",
    steps: [.insertNew(stranger), .died(stranger, .foreign), .started(stranger, .ours)],
    excluded: [main, shield, stranger]),
  .init(
    name: "our new connection killed later: its base is freed",
    steps: [.insertNew(stranger), .started(stranger, .ours), .died(stranger, .ourConnectionDied)],
    excluded: [main, shield]),
  .init(
    name: "a connection from before the context: no start comes, its death frees it",
    steps: [.insert(stranger), .died(stranger, .ourConnectionDied)], excluded: [main, shield]),
]

@Test("self-exclusion of the RECORD stream", arguments: cases)
func ownConnections(_ c: OwnConnectionsCase) {
  var own = OwnConnections([main, shield])
  for step in c.steps {
    switch step {
    case .insert(let b): own.insert(b)
    case .insertNew(let b): own.insertNew(b)
    case .closed(let b): own.closed(b)
    case .started(let b, let v): #expect(own.started(b) == v, "ClientStarted \(b)")
    case .died(let b, let v): #expect(own.died(b) == v, "ClientDied \(b)")
    }
  }
  #expect(own.excluded == c.excluded)
}

@Test("the pump stops excluding a base when its ClientDied is read, so the next holder fires")
func pumpForgetsKilledBase() throws {
  func record(_ category: RecordedReply.Category, _ base: UInt32) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: 32)
    b[0] = 1
    b[1] = category.rawValue
    withUnsafeBytes(of: base.littleEndian) { for (i, v) in $0.enumerated() { b[12 + i] = v } }
    return b
  }
  var pump = PumpState(excluded: [shield])
  let conn = XCBHandle(raw: try #require(OpaquePointer(bitPattern: 0x1000)))
  let committed = pump.commit(removesShields: false, connection: conn, shields: [7], targets: [9])
  #expect(committed)
  #expect(pump.deliver(record(.clientStarted, shield)).isEmpty)
  #expect(pump.deliver(record(.clientDied, shield)).isEmpty)
  #expect(pump.deliver(record(.clientStarted, shield)) == [7])
}
