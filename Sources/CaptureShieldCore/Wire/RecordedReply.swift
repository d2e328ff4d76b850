/// One reply of RECORD EnableContext, decoded. The header is in the recording connection's
/// byte order (native); the data in the recorded client's (see `dataIsBigEndian`).
public struct RecordedReply: Sendable, Hashable {
  public enum Category: UInt8, Sendable, Hashable {
    case fromServer = 0
    case fromClient = 1
    case clientStarted = 2
    case clientDied = 3
    case startOfData = 4
    case endOfData = 5
  }
  /// nil for a category this code does not know.
  public var category: Category?
  public var elementHeader: UInt8
  public var clientSwapped: Bool
  /// Resource-id base of the recorded client (0 for StartOfData/EndOfData).
  public var idBase: UInt32
  /// Server time (ms) when the server started this reply.
  public var serverTime: UInt32
  /// Byte range of the data (after the 32-byte header) in the buffer given to `decode`.
  public var data: Range<Int>

  /// Whether the recorded data is big-endian, given the recording connection's order.
  public func dataIsBigEndian(hostIsBigEndian: Bool = 1.bigEndian == 1) -> Bool {
    clientSwapped != hostIsBigEndian
  }

  /// Decodes the 32-byte header of a RECORD reply; nil when it is not one. The data range is
  /// clamped to the bytes given.
  public static func decode(_ reply: UnsafeRawBufferPointer, hostIsBigEndian: Bool = 1.bigEndian == 1)
    -> RecordedReply?
  {
    guard reply.count >= 32, reply[0] == 1 else { return nil }
    let length = RequestReader.load32(reply, 4, hostIsBigEndian)
    let declared = UInt64(length) * 4
    let end = 32 + Int(min(declared, UInt64(reply.count - 32)))
    return RecordedReply(
      category: Category(rawValue: reply[1]), elementHeader: reply[8], clientSwapped: reply[9] != 0,
      idBase: RequestReader.load32(reply, 12, hostIsBigEndian),
      serverTime: RequestReader.load32(reply, 16, hostIsBigEndian), data: 32..<end)
  }

  /// Calls `body` with each complete request in FromClient data (RECORD concatenates the
  /// requests of one client into one reply), in order. Stops at the first malformed or
  /// truncated one. Element headers (timestamps, sequence numbers) must be off.
  /// - Returns: the number of bytes consumed (less than `data.count` when it stopped early).
  @discardableResult
  public static func forEachRequest(
    in data: UnsafeRawBufferPointer, bigEndian: Bool, _ body: (UnsafeRawBufferPointer) -> Void
  ) -> Int {
    var p = 0
    while data.count - p >= 4 {
      let length16 = RequestReader.load16(data, p + 2, bigEndian)
      var size: Int
      if length16 != 0 {
        size = Int(length16) * 4
      } else {
        guard data.count - p >= 8 else { return p }
        let length32 = RequestReader.load32(data, p + 4, bigEndian)
        guard length32 >= 2, length32 <= UInt32(Int32.max / 4) else { return p }
        size = Int(length32) * 4
      }
      guard size <= data.count - p else { return p }
      body(UnsafeRawBufferPointer(rebasing: data[p..<(p + size)]))
      p += size
    }
    return p
  }
}
