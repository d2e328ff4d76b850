// Decoding the Xorg module's CaptureNotify events (no X needed: the events are bytes).

import CXCB
import Foundation
import Testing

@testable import CaptureShield

@Suite("The Xorg module's events (ServerModule.notify)")
struct ServerModuleTests {
  static let module = ServerModule(
    majorOpcode: 140, firstEvent: 90, version: (1, 2), mode: .censor, callerTrust: .trustList)

  /// A 32-byte CaptureNotify as the server sends it (`sentByClient`: as SendEvent delivers it).
  static func event(kind: UInt8, sentByClient: Bool) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: 32)
    b[0] = 90 | (sentByClient ? 0x80 : 0)
    b[1] = kind
    withUnsafeBytes(of: UInt32(0x40_0000).littleEndian) { b.replaceSubrange(4..<8, with: $0) }
    withUnsafeBytes(of: UInt32(0x40_0001).littleEndian) { b.replaceSubrange(8..<12, with: $0) }
    b[16] = 73
    withUnsafeBytes(of: UInt32(1234).littleEndian) { b.replaceSubrange(20..<24, with: $0) }
    return b
  }

  static func decode(_ bytes: [UInt8]) -> ServerModule.Notify? {
    var b = bytes
    return b.withUnsafeMutableBytes { raw in
      module.notify(raw.baseAddress!.assumingMemoryBound(to: xcb_generic_event_t.self))
    }
  }

  @Test(arguments: [UInt8(0), 1, 2, 5, 6])
  func theModulesOwnEventsAreDecoded(kind: UInt8) throws {
    let n = try #require(Self.decode(Self.event(kind: kind, sentByClient: false)))
    #expect(
      n
        == ServerModule.Notify(
          kind: kind, reader: 0x40_0000, drawable: 0x40_0001, requestMajor: 73, requestMinor: 0, pid: 1234))
  }

  /// Any client can SendEvent any event type to a daemon window: such a forged notice
  /// would write false audit records (or make the daemon follow windows), so it is dropped.
  @Test(arguments: [UInt8(0), 1, 2, 5, 6])
  func aForgedEventIsDropped(kind: UInt8) {
    #expect(Self.decode(Self.event(kind: kind, sentByClient: true)) == nil)
  }

  @Test func anotherExtensionsEventIsNotOurs() {
    var b = Self.event(kind: 0, sentByClient: false)
    b[0] = 91
    #expect(Self.decode(b) == nil)
  }
}
