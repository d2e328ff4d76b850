// The one deterministic random number generator of the tests and the benchmark.

/// A small deterministic PRNG (SplitMix64), so every random case, fault schedule and
/// benchmark data set can be reproduced from its seed.
public struct SplitMix64: RandomNumberGenerator {
  public var state: UInt64

  public init(seed: UInt64) { state = seed }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// `count` random bytes (the low byte of one `next()` each).
  public mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }

  /// A number in `0..<n` (`next() % n`).
  public mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }

  /// One element of a non-empty array.
  public mutating func pick<T>(_ a: [T]) -> T { a[int(a.count)] }

  /// True with probability `p` (in steps of one millionth).
  public mutating func chance(_ p: Double) -> Bool { Double(next() % 1_000_000) / 1e6 < p }
}
