// The wire format: bounds-checked reads of one recorded request (`RequestReader`, used by
// `ResolvedCaptureCatalog.classify`) and the decoding of RECORD replies. Offsets follow
// the conventions in CaptureCatalog.swift.

/// Bounds-checked reads from one request. Fails (nil) instead of trapping.
struct RequestReader {
  let bytes: UnsafeRawBufferPointer
  let bigEndian: Bool
  /// BIG-REQUESTS form: fields at offset >= 4 are 4 bytes later.
  let shift: Int
  let major: UInt8
  let minorOrData: UInt8

  /// nil when the bytes are not one complete request (short, length 0 without an extended
  /// length, declared length longer than the bytes).
  init?(_ bytes: UnsafeRawBufferPointer, bigEndian: Bool) {
    guard bytes.count >= 4 else { return nil }
    self.bigEndian = bigEndian
    major = bytes[0]
    minorOrData = bytes[1]
    let length16 = Self.load16(bytes, 2, bigEndian)
    let total: Int
    if length16 != 0 {
      total = Int(length16) * 4
      shift = 0
    } else {
      guard bytes.count >= 8 else { return nil }
      let length32 = Self.load32(bytes, 4, bigEndian)
      guard length32 >= 2, length32 <= UInt32(Int32.max / 4) else { return nil }
      total = Int(length32) * 4
      shift = 4
    }
    guard total <= bytes.count else { return nil }
    self.bytes = UnsafeRawBufferPointer(rebasing: bytes[0..<total])
  }

  func position(_ offset: Int) -> Int { offset >= 4 ? offset + shift : offset }

  func u8(_ offset: Int) -> UInt8? {
    let p = position(offset)
    guard p >= 0, p < bytes.count else { return nil }
    return bytes[p]
  }

  func u32(_ offset: Int) -> UInt32? {
    let p = position(offset)
    guard p >= 0, p <= bytes.count - 4 else { return nil }
    return Self.load32(bytes, p, bigEndian)
  }

  func valueListItem(maskOffset: Int, bit: Int) -> UInt32? {
    guard bit >= 0, bit < 32, let mask = u32(maskOffset), mask & (1 << UInt32(bit)) != 0 else { return nil }
    let index = (mask & ((1 << UInt32(bit)) - 1)).nonzeroBitCount
    return u32(maskOffset + 4 + 4 * index)
  }

  static func load16(_ b: UnsafeRawBufferPointer, _ p: Int, _ big: Bool) -> UInt16 {
    let (x, y) = (UInt16(b[p]), UInt16(b[p + 1]))
    return big ? x << 8 | y : y << 8 | x
  }

  static func load32(_ b: UnsafeRawBufferPointer, _ p: Int, _ big: Bool) -> UInt32 {
    let v = (UInt32(b[p]), UInt32(b[p + 1]), UInt32(b[p + 2]), UInt32(b[p + 3]))
    return big ? v.0 << 24 | v.1 << 16 | v.2 << 8 | v.3 : v.3 << 24 | v.2 << 16 | v.1 << 8 | v.0
  }
}

// MARK: - RECORD data

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
