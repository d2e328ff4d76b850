// The libraries an ELF program or library names in its dynamic section (`DT_NEEDED`,
// `DT_RUNPATH`, `DT_RPATH`): how `XClientPrograms` knows which programs load libxcb.
// Pure (it reads through a closure), and it parses files any user can put in a directory
// on the daemon's PATH: bounds-checked, no trapping arithmetic, fuzzed
// (scripts/fuzz.sh, target capture).

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The libraries an ELF object names in its dynamic section.
public struct ElfDependencies: Equatable, Sendable {
  /// DT_NEEDED entries, in order.
  public var needed: [String]
  /// DT_RUNPATH entries, else DT_RPATH ones (the loader ignores RPATH when RUNPATH is set).
  public var searchPath: [String]

  /// Reads the dynamic section of the 64-bit little-endian ELF file at `path`; `nil` for
  /// anything else (scripts, 32-bit or static programs, unreadable or malformed files).
  public static func read(_ path: String) -> ElfDependencies? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    return parse { offset, count in
      guard offset >= 0, count >= 0, count <= 1 << 20 else { return nil }
      var buf = [UInt8](repeating: 0, count: count)
      let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
      return n == count ? buf : nil
    }
  }

  /// Parses an ELF image through `read(offset, count)` (tests hand it a byte array).
  public static func parse(_ read: (Int, Int) -> [UInt8]?) -> ElfDependencies? {
    guard let h = read(0, 64), h[0] == 0x7f, h[1] == 0x45, h[2] == 0x4c, h[3] == 0x46, h[4] == 2, h[5] == 1
    else { return nil }
    let phoff = Int(clamping: h.u64(0x20))
    let phentsize = Int(h.u16(0x36))
    let phnum = Int(h.u16(0x38))
    guard phentsize >= 56, phnum > 0, phnum <= 512, let ph = read(phoff, phentsize * phnum) else { return nil }
    var loads: [(vaddr: UInt64, offset: UInt64, size: UInt64)] = []
    var dynamic: (offset: Int, size: Int)? = nil
    for i in 0..<phnum {
      let b = i * phentsize
      switch ph.u32(b) {
      case 1: loads.append((ph.u64(b + 16), ph.u64(b + 8), ph.u64(b + 32)))
      case 2: dynamic = (Int(clamping: ph.u64(b + 8)), Int(clamping: ph.u64(b + 32)))
      default: break
      }
    }
    guard let dynamic, dynamic.size <= 1 << 16, let dyn = read(dynamic.offset, dynamic.size / 16 * 16) else {
      return nil
    }
    var needed: [UInt64] = []
    var runpath: UInt64? = nil
    var rpath: UInt64? = nil
    var strtab: UInt64? = nil
    var strsz: UInt64 = 0
    for b in stride(from: 0, to: dyn.count, by: 16) {
      let value = dyn.u64(b + 8)
      switch dyn.u64(b) {
      case 0: break
      case 1: needed.append(value)
      case 5: strtab = value
      case 10: strsz = value
      case 15: rpath = value
      case 29: runpath = value
      default: continue
      }
      if dyn.u64(b) == 0 { break }
    }
    // DT_STRTAB is an address: find the file offset through the loaded segments.
    // (Every field comes from the file: arithmetic on them must not trap.)
    guard let strtab, strsz > 0, strsz <= 1 << 20,
      let seg = loads.first(where: { $0.vaddr <= strtab && strtab - $0.vaddr < $0.size }),
      case let (offset, overflow) = (strtab - seg.vaddr).addingReportingOverflow(seg.offset), !overflow,
      let strings = read(Int(clamping: offset), Int(strsz))
    else { return needed.isEmpty ? ElfDependencies(needed: [], searchPath: []) : nil }
    func string(_ at: UInt64) -> String? {
      guard at < UInt64(strings.count) else { return nil }
      let start = Int(at)
      let end = strings[start...].firstIndex(of: 0) ?? strings.count
      return String(decoding: strings[start..<end], as: UTF8.self)
    }
    let path = (runpath ?? rpath).flatMap(string).map { $0.split(separator: ":").map(String.init) } ?? []
    return ElfDependencies(needed: needed.compactMap(string), searchPath: path)
  }
}

extension Array where Element == UInt8 {
  fileprivate func u16(_ at: Int) -> UInt16 { at + 2 <= count ? UInt16(self[at]) | UInt16(self[at + 1]) << 8 : 0 }
  fileprivate func u32(_ at: Int) -> UInt32 {
    at + 4 <= count ? (0..<4).reduce(0) { $0 | UInt32(self[at + $1]) << (8 * $1) } : 0
  }
  fileprivate func u64(_ at: Int) -> UInt64 {
    at + 8 <= count ? (0..<8).reduce(0) { $0 | UInt64(self[at + $1]) << (8 * $1) } : 0
  }
}
