// The wire format: bounds-checked reads of one recorded request (`RequestReader`, used by
// `ResolvedCaptureCatalog.classify`); RECORD replies are decoded in RecordedReply.swift.
// Offsets follow the conventions in CaptureCatalog.swift.

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
