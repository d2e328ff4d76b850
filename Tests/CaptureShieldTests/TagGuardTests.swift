import Testing

@testable import CaptureShield

/// Who may lift a secure tag (`TagGuard`), and the recorded DeleteProperty it reads.
@Suite("secure tags stick against other clients")
struct TagGuardTests {
  static let owner = ClientID(0x20_0000)
  static let daemon: Set<ClientID> = [ClientID(0x40_0000), ClientID(0x60_0000)]

  @Test(
    "the owner's or the daemon's removal stands; another client's, or an unknown one, is undone",
    arguments: [
      (ClientID?.some(ClientID(0x20_0000)), TagGuard.Verdict.lift),
      (ClientID(0x40_0000), .lift),
      (ClientID(0x60_0000), .lift),
      (ClientID(0x80_0000), .restore),
      (nil, .restore),
    ])
  func verdict(remover: ClientID?, expected: TagGuard.Verdict) {
    #expect(TagGuard.verdict(remover: remover, owner: Self.owner, daemon: Self.daemon) == expected)
  }

  @Test("a window whose owner is unknown: only the daemon lifts its tag")
  func unknownOwner() {
    #expect(TagGuard.verdict(remover: ClientID(0x80_0000), owner: nil, daemon: Self.daemon) == .restore)
    #expect(TagGuard.verdict(remover: ClientID(0x40_0000), owner: nil, daemon: Self.daemon) == .lift)
  }

  static func request(_ opcode: UInt8, window: UInt32, property: UInt32, bigEndian: Bool) -> [UInt8] {
    func word(_ v: UInt32) -> [UInt8] {
      let le = (0..<4).map { UInt8(truncatingIfNeeded: v >> ($0 * 8)) }
      return bigEndian ? le.reversed() : le
    }
    let length: [UInt8] = bigEndian ? [0, 3] : [3, 0]
    return [opcode, 0] + length + word(window) + word(property)
  }

  @Test("DeleteProperty is decoded in either byte order; other requests are not", arguments: [false, true])
  func decode(bigEndian: Bool) {
    let delete = Self.request(19, window: 0x120_0004, property: 0x1a5, bigEndian: bigEndian)
    let d = delete.withUnsafeBytes { TagGuard.deletedProperty($0, bigEndian: bigEndian) }
    #expect(d?.window == 0x120_0004 && d?.property == 0x1a5)
    let change = Self.request(18, window: 0x120_0004, property: 0x1a5, bigEndian: bigEndian)
    #expect(change.withUnsafeBytes { TagGuard.deletedProperty($0, bigEndian: bigEndian) } == nil)
    #expect(Array(delete.prefix(8)).withUnsafeBytes { TagGuard.deletedProperty($0, bigEndian: bigEndian) } == nil)
  }

  @Test("secure and malformed tags ask for protection; absent and 0 do not")
  func asksSecure() {
    #expect(TagState.secure.asksSecure && TagState.malformed.asksSecure)
    #expect(!TagState.absent.asksSecure && !TagState.notSecure.asksSecure)
  }
}
