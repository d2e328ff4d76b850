internal import CSodium

/// Memory for secrets: `sodium_malloc` (guard pages, canary), locked with `sodium_mlock`
/// so it is never swapped out, wiped with `sodium_memzero` and freed with `sodium_free`.
final class SecureBuffer {
  let pointer: UnsafeMutableRawPointer
  let capacity: Int
  /// Bytes in use (≤ capacity).
  var count: Int

  /// A zeroed buffer of `capacity` bytes (at least 1); nil when libsodium cannot allocate.
  init?(capacity: Int) {
    guard SealedText.sodiumReady, let p = sodium_malloc(max(1, capacity)) else { return nil }
    pointer = p
    self.capacity = max(1, capacity)
    count = 0
    _ = sodium_mlock(p, self.capacity)
    sodium_memzero(p, self.capacity)
  }

  deinit {
    sodium_memzero(pointer, capacity)
    _ = sodium_munlock(pointer, capacity)
    sodium_free(pointer)
  }

  var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: pointer, count: count) }

  /// Appends `data`, growing (into a new buffer, the old one wiped) when needed.
  /// Returns false when the allocation fails.
  static func append(_ data: UnsafeRawBufferPointer, to buffer: inout SecureBuffer) -> Bool {
    if buffer.count + data.count > buffer.capacity {
      guard let bigger = SecureBuffer(capacity: max(buffer.capacity * 2, buffer.count + data.count)) else {
        return false
      }
      bigger.pointer.copyMemory(from: buffer.pointer, byteCount: buffer.count)
      bigger.count = buffer.count
      buffer.wipe()
      buffer = bigger
    }
    if let base = data.baseAddress, data.count > 0 {
      (buffer.pointer + buffer.count).copyMemory(from: base, byteCount: data.count)
    }
    buffer.count += data.count
    return true
  }

  /// Zeroes every byte (the buffer stays allocated and reusable).
  func wipe() {
    sodium_memzero(pointer, capacity)
    count = 0
  }
}

/// Text kept sealed in memory: `crypto_secretbox_easy` (XSalsa20-Poly1305) with a random
/// key from `randombytes_buf` that exists only in this object's locked memory. The
/// plaintext exists only while `open` runs, in a `SecureBuffer` the caller wipes.
final class SealedText {
  enum SealError: Error, Equatable {
    case unavailable
    /// Authentication failed: the box was changed (or the key is gone).
    case forged
    case wiped
  }

  /// Whether `sodium_init` succeeded (once per process).
  static let sodiumReady: Bool = sodium_init() >= 0

  private let key: SecureBuffer
  private let box: SecureBuffer
  private var nonce = [UInt8](repeating: 0, count: Int(crypto_secretbox_NONCEBYTES))
  /// Plaintext size in bytes.
  let size: Int
  private(set) var isWiped = false

  /// Seals `plaintext` (the caller wipes its own copy).
  init(sealing plaintext: UnsafeRawBufferPointer) throws(SealError) {
    let mac = Int(crypto_secretbox_MACBYTES)
    guard let key = SecureBuffer(capacity: Int(crypto_secretbox_KEYBYTES)),
      let box = SecureBuffer(capacity: plaintext.count + mac)
    else { throw .unavailable }
    randombytes_buf(key.pointer, key.capacity)
    key.count = key.capacity
    nonce.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
    let message = plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self)
    var empty: UInt8 = 0
    let rc = nonce.withUnsafeBytes { n in
      crypto_secretbox_easy(
        box.pointer.assumingMemoryBound(to: UInt8.self), message ?? withUnsafePointer(to: &empty) { $0 },
        UInt64(plaintext.count), n.baseAddress!.assumingMemoryBound(to: UInt8.self),
        key.pointer.assumingMemoryBound(to: UInt8.self))
    }
    guard rc == 0 else { throw .unavailable }
    box.count = plaintext.count + mac
    self.key = key
    self.box = box
    size = plaintext.count
  }

  /// Decrypts into a fresh `SecureBuffer`; the caller wipes it (or drops it: deinit wipes).
  func open() throws(SealError) -> SecureBuffer {
    guard !isWiped else { throw .wiped }
    guard let out = SecureBuffer(capacity: size) else { throw .unavailable }
    let rc = nonce.withUnsafeBytes { n in
      crypto_secretbox_open_easy(
        out.pointer.assumingMemoryBound(to: UInt8.self), box.pointer.assumingMemoryBound(to: UInt8.self),
        UInt64(box.count), n.baseAddress!.assumingMemoryBound(to: UInt8.self),
        key.pointer.assumingMemoryBound(to: UInt8.self))
    }
    guard rc == 0 else {
      out.wipe()
      throw .forged
    }
    out.count = size
    return out
  }

  /// Wipes the key and the box: the text is gone for good.
  func wipe() {
    key.wipe()
    box.wipe()
    isWiped = true
  }

  // MARK: For tests

  /// Every byte of memory this object owns (key, box, nonce), for wipe tests.
  var ownedBytesForTesting: [UInt8] {
    Array(UnsafeRawBufferPointer(start: key.pointer, count: key.capacity))
      + Array(UnsafeRawBufferPointer(start: box.pointer, count: box.capacity))
  }

  /// Flips one bit of the box (tamper test).
  func tamperForTesting(at index: Int) {
    let p = box.pointer.assumingMemoryBound(to: UInt8.self)
    p[index % box.count] ^= 0x01
  }
}
