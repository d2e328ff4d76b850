// Forged events and commands (`ForgedAudit`): the first is audited at once, the rest within
// 5 s are counted into the next record; events and commands are limited apart.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

@Suite struct ForgedAuditTests {
  static func field(_ r: AuditRecord?, _ key: String) -> AuditRecord.Value? {
    r?.fields.first { $0.key == key }?.value
  }

  @Test func theFirstIsAuditedAndTheNextFiveSecondsAreCountedIntoOneRecord() {
    var a = ForgedAudit()
    let first = a.forgedEvent(type: 17, window: 0x40_0001, connection: "main", now: .seconds(100))
    #expect(first?.event == "forged-event")
    #expect(Self.field(first, "count") == .int(1))
    #expect(Self.field(first, "window") == .string("0x400001"))
    #expect(Self.field(first, "type") == .int(17))
    #expect(Self.field(first, "connection") == .string("main"))
    for t in [100.5, 102.0, 104.9] {
      #expect(a.forgedEvent(type: 17, window: 0x40_0001, connection: "shield", now: .seconds(t)) == nil)
    }
    let next = a.forgedEvent(type: 18, window: 0x40_0002, connection: "shield", now: .seconds(105))
    #expect(Self.field(next, "count") == .int(4))
    #expect(Self.field(next, "connection") == .string("shield"))
    // The count started again.
    #expect(Self.field(a.forgedEvent(type: 18, window: 2, connection: "main", now: .seconds(111)), "count") == .int(1))
  }

  @Test func commandsAreLimitedApartFromEvents() {
    var a = ForgedAudit()
    #expect(a.forgedEvent(type: 33, window: 1, connection: "main", now: .seconds(10)) != nil)
    let cmd = a.forgedCommand([CommandCode.pause.rawValue, 0, 0, 4242], now: .seconds(10.1))
    #expect(cmd?.event == "forged-command")
    #expect(Self.field(cmd, "command") == .string("pause"))
    #expect(Self.field(cmd, "claimed-pid") == .int(4242))
    #expect(Self.field(cmd, "count") == .int(1))
    #expect(a.forgedCommand([CommandCode.pause.rawValue], now: .seconds(12)) == nil)
    #expect(a.forgedEvent(type: 33, window: 1, connection: "main", now: .seconds(12)) == nil)
    let later = a.forgedCommand([999], now: .seconds(16))
    #expect(Self.field(later, "command") == .string("unknown (999)"))
    #expect(Self.field(later, "claimed-pid") == .int(0))
    #expect(Self.field(later, "count") == .int(2))
  }
}
