// RECORD reply decoding on hand-built bytes (`RequestBytes`, `Fixture`: CaptureCatalogTests.swift).

import CaptureShield
import Foundation
import ShieldTestSupport
import Testing

@Suite("RECORD reply decoding")
struct RecordDecodingTests {
  static func reply(category: UInt8, idBase: UInt32, data: [UInt8], swapped: Bool = false) -> [UInt8] {
    var r = RequestBytes(1, category, words: 8)
    r.put32(4, UInt32(data.count / 4))
    r.put8(9, swapped ? 1 : 0)
    r.put32(12, idBase)
    r.put32(16, 123_456)
    return r.bytes + data
  }

  @Test("a FromClient reply with three requests, one in BIG-REQUESTS form")
  func splits() {
    let a = RequestBytes(73, 2, words: 5).with { $0.put32(4, Fixture.root) }
    let b = RequestBytes.bigRequestForm(RequestBytes(62, 0, words: 7).with { $0.put32(4, Fixture.foreign) })
    let c = RequestBytes(36, 0, words: 1).bytes
    let bytes = Self.reply(category: 1, idBase: Fixture.base, data: a + b + c)
    bytes.withUnsafeBytes { raw in
      let rep = RecordedReply.decode(raw, hostIsBigEndian: false)
      #expect(rep?.category == .fromClient)
      #expect(rep?.idBase == Fixture.base)
      #expect(rep?.serverTime == 123_456)
      #expect(rep?.data == 32..<(32 + a.count + b.count + c.count))
      #expect(rep?.dataIsBigEndian(hostIsBigEndian: false) == false)
      var seen: [CaptureRequest?] = []
      let consumed = RecordedReply.forEachRequest(
        in: UnsafeRawBufferPointer(rebasing: raw[rep!.data]), bigEndian: false
      ) {
        seen.append(Fixture.resolved.classify($0, clientBase: Fixture.base, resourceMask: Fixture.mask) { _ in false })
      }
      #expect(consumed == a.count + b.count + c.count)
      #expect(
        seen == [
          CaptureRequest(kind: "GetImage", target: Fixture.root),
          CaptureRequest(kind: "CopyArea", target: Fixture.foreign), CaptureRequest(kind: "GrabServer"),
        ])
    }
  }

  @Test("splitting stops at a truncated request and reports how far it got")
  func truncated() {
    let a = RequestBytes(73, 2, words: 5).with { $0.put32(4, Fixture.root) }
    let data = a + Array(a.prefix(10))
    data.withUnsafeBytes { raw in
      var n = 0
      let consumed = RecordedReply.forEachRequest(in: raw, bigEndian: false) { _ in n += 1 }
      #expect(n == 1)
      #expect(consumed == a.count)
    }
  }

  @Test("a swapped client's data is big-endian; headers that are not replies are rejected")
  func headers() {
    Self.reply(category: 2, idBase: 0x60_0000, data: [], swapped: true).withUnsafeBytes { raw in
      let rep = RecordedReply.decode(raw, hostIsBigEndian: false)
      #expect(rep?.category == .clientStarted)
      #expect(rep?.dataIsBigEndian(hostIsBigEndian: false) == true)
    }
    Self.reply(category: 9, idBase: 0, data: []).withUnsafeBytes {
      #expect(RecordedReply.decode($0, hostIsBigEndian: false)?.category == nil)
    }
    [UInt8](repeating: 0, count: 32).withUnsafeBytes { #expect(RecordedReply.decode($0) == nil) }
    [UInt8](repeating: 1, count: 31).withUnsafeBytes { #expect(RecordedReply.decode($0) == nil) }
    // Declared length beyond the bytes: the data range is clamped.
    var long = Self.reply(category: 1, idBase: 1, data: [0, 0, 0, 0])
    long[4] = 0xff
    long.withUnsafeBytes { #expect(RecordedReply.decode($0, hostIsBigEndian: false)?.data == 32..<36) }
  }

  @Test("fuzz: random and mutated bytes never trap", arguments: [1, 2, 3, 4])
  func fuzz(seed: UInt64) {
    var rng = SplitMix64(seed: seed)
    let valid = (ClassifyCase.core + ClassifyCase.extensions + ClassifyCase.encodings).map(\.bytes)
    var classified = 0
    for i in 0..<20000 {
      var bytes: [UInt8]
      if i % 2 == 0 {
        bytes = (0..<Int.random(in: 0...96, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        // Bias towards catalogued opcodes and small lengths so the deep paths run.
        if bytes.count >= 4, Bool.random(using: &rng) {
          bytes[0] = [1, 2, 36, 55, 56, 62, 63, 73, 93, 129, 130, 138, 139, 142, 143, 145, 146, 150, 155, 156]
            .randomElement(using: &rng)!
          bytes[2] = UInt8.random(in: 0...30, using: &rng)
          bytes[3] = 0
        }
      } else {
        bytes = valid.randomElement(using: &rng)!
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
          switch Int.random(in: 0...2, using: &rng) {
          case 0 where !bytes.isEmpty: bytes.removeLast(Int.random(in: 0...bytes.count, using: &rng))
          case 1 where !bytes.isEmpty:
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= 1 << UInt8.random(in: 0...7, using: &rng)
          default: bytes += [UInt8.random(in: 0...255, using: &rng)]
          }
        }
      }
      let big = Bool.random(using: &rng)
      if Fixture.classify(bytes, bigEndian: big) != nil { classified += 1 }
      bytes.withUnsafeBytes { raw in
        _ = RecordedReply.decode(raw)
        let consumed = RecordedReply.forEachRequest(in: raw, bigEndian: big) { request in
          _ = Fixture.resolved.classify(request, clientBase: Fixture.base, resourceMask: Fixture.mask) { _ in true }
        }
        #expect(consumed >= 0 && consumed <= raw.count)
      }
    }
    #expect(classified > 0)
  }
}
