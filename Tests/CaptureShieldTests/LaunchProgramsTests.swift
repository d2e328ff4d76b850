import Foundation
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

#if canImport(Glibc)
  import Glibc
#endif

/// A minimal 64-bit little-endian ELF image: one PT_LOAD over the whole file, one
/// PT_DYNAMIC with the given DT_NEEDED entries (and DT_RUNPATH or DT_RPATH).
func fakeElf(
  needed: [String], runpath: String? = nil, rpath: String? = nil, elfClass: UInt8 = 2, loadOffset: UInt64 = 0
) -> [UInt8] {
  var strtab: [UInt8] = [0]
  func add(_ s: String) -> UInt64 {
    defer { strtab += Array(s.utf8) + [0] }
    return UInt64(strtab.count)
  }
  var dyn: [(UInt64, UInt64)] = needed.map { (1, add($0)) }
  if let runpath { dyn.append((29, add(runpath))) }
  if let rpath { dyn.append((15, add(rpath))) }
  let base: UInt64 = 0x40_0000
  let dynOff = 64 + 2 * 56
  let strOff = dynOff + (dyn.count + 3) * 16
  dyn += [(5, base + UInt64(strOff)), (10, UInt64(strtab.count)), (0, 0)]
  let total = strOff + strtab.count
  var out: [UInt8] = []
  func put(_ v: UInt64, _ n: Int) { for i in 0..<n { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) } }
  out += [0x7f, 0x45, 0x4c, 0x46, elfClass, 1, 1, 0] + [UInt8](repeating: 0, count: 8)
  put(3, 2)  // ET_DYN
  put(62, 2)  // x86-64
  put(1, 4)
  put(0, 8)  // entry
  put(64, 8)  // phoff
  put(0, 8)  // shoff
  put(0, 4)
  put(64, 2)
  put(56, 2)
  put(2, 2)  // phnum
  put(64, 2)
  put(0, 2)
  put(0, 2)
  // PT_LOAD
  put(1, 4)
  put(5, 4)
  put(loadOffset, 8)
  put(base, 8)
  put(base, 8)
  put(UInt64(total), 8)
  put(UInt64(total), 8)
  put(0x1000, 8)
  // PT_DYNAMIC
  put(2, 4)
  put(6, 4)
  put(UInt64(dynOff), 8)
  put(base + UInt64(dynOff), 8)
  put(base + UInt64(dynOff), 8)
  put(UInt64(dyn.count * 16), 8)
  put(UInt64(dyn.count * 16), 8)
  put(8, 8)
  for (tag, value) in dyn {
    put(tag, 8)
    put(value, 8)
  }
  out += strtab
  precondition(out.count == total)
  return out
}

@Suite struct ElfDependenciesTests {
  struct Case: Sendable, CustomTestStringConvertible {
    var name: String
    var image: [UInt8]
    var expected: ElfDependencies?
    var testDescription: String { name }
  }

  @Test(
    "DT_NEEDED and the search path of an ELF image",
    arguments: [
      Case(
        name: "needed in order", image: fakeElf(needed: ["libX11.so.6", "libc.so.6"]),
        expected: ElfDependencies(needed: ["libX11.so.6", "libc.so.6"], searchPath: [])),
      Case(
        name: "runpath wins over rpath",
        image: fakeElf(needed: ["libfoo.so"], runpath: "$ORIGIN/../lib:/opt/x", rpath: "/ignored"),
        expected: ElfDependencies(needed: ["libfoo.so"], searchPath: ["$ORIGIN/../lib", "/opt/x"])),
      Case(
        name: "rpath alone", image: fakeElf(needed: ["libfoo.so"], rpath: "/opt/y"),
        expected: ElfDependencies(needed: ["libfoo.so"], searchPath: ["/opt/y"])),
      Case(name: "no dependencies", image: fakeElf(needed: []), expected: ElfDependencies(needed: [], searchPath: [])),
      Case(name: "32-bit", image: fakeElf(needed: ["libc.so.6"], elfClass: 1), expected: nil),
      Case(name: "a script", image: Array("#!/bin/sh\necho hi\n".utf8), expected: nil),
      Case(name: "truncated header", image: Array(fakeElf(needed: ["libc.so.6"]).prefix(40)), expected: nil),
      Case(name: "truncated dynamic section", image: Array(fakeElf(needed: ["libc.so.6"]).prefix(200)), expected: nil),
      Case(name: "empty", image: [], expected: nil),
      Case(
        name: "segment file offset that overflows", image: fakeElf(needed: ["libc.so.6"], loadOffset: UInt64.max - 8),
        expected: nil),
      Case(
        name: "segment file offset past the end", image: fakeElf(needed: ["libc.so.6"], loadOffset: 1 << 40),
        expected: nil),
      Case(
        name: "program header offset beyond Int (found by the fuzzer)",
        image: {
          var image = fakeElf(needed: ["libc.so.6"])
          for i in 0x20..<0x28 { image[i] = 0xff }
          return image
        }(), expected: nil),
    ])
  func parse(_ c: Case) {
    let parsed = ElfDependencies.parse { offset, count in
      offset >= 0 && count >= 0 && offset <= c.image.count && count <= c.image.count - offset
        ? Array(c.image[offset..<offset + count]) : nil
    }
    #expect(parsed == c.expected)
  }

  /// A real program: this test process.
  @Test func readsARealProgram() throws {
    let deps = try #require(ElfDependencies.read("/proc/self/exe"))
    #expect(deps.needed.contains { $0.hasPrefix("libc.so.") }, "\(deps.needed)")
    #expect(ElfDependencies.read("/nonexistent") == nil)
  }
}

/// A scratch directory with programs and libraries made of `fakeElf` images.
struct FakeSystem {
  let root: URL
  var bin: String { root.appendingPathComponent("bin").path }
  var lib: String { root.appendingPathComponent("lib").path }
  var libxcb: String { lib + "/libxcb.so.1" }

  init(_ name: String) throws {
    root = FileManager.default.temporaryDirectory.appendingPathComponent(
      "\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    for d in ["bin", "lib", "opt/lib", "opt/bin"] {
      try FileManager.default.createDirectory(
        at: root.appendingPathComponent(d), withIntermediateDirectories: true)
    }
    try write(lib + "/libxcb.so.1", fakeElf(needed: ["libc.so.6"]))
    try write(lib + "/libX11.so.6", fakeElf(needed: ["libxcb.so.1", "libc.so.6"]))
    try write(lib + "/libMagick.so.6", fakeElf(needed: ["libX11.so.6"]))
    try write(lib + "/libplain.so.1", fakeElf(needed: ["libc.so.6"]))
    try write(lib + "/libloop.so.1", fakeElf(needed: ["libloop.so.1"]))
    try write(root.path + "/opt/lib/libown.so", fakeElf(needed: ["libX11.so.6"]))
    try write(bin + "/xtool", fakeElf(needed: ["libX11.so.6", "libc.so.6"]))
    try write(bin + "/deep", fakeElf(needed: ["libMagick.so.6"]))
    try write(bin + "/direct", fakeElf(needed: ["libxcb.so.1"]))
    try write(bin + "/plain", fakeElf(needed: ["libplain.so.1", "libc.so.6"]))
    try write(bin + "/cycle", fakeElf(needed: ["libloop.so.1"]))
    try write(bin + "/missing", fakeElf(needed: ["libnothere.so.1"]))
    try write(bin + "/script", Array("#!/bin/sh\nxwd\n".utf8))
    try write(bin + "/origin", fakeElf(needed: ["libown.so"], runpath: "$ORIGIN/../opt/lib"))
    try write(bin + "/noexec", fakeElf(needed: ["libX11.so.6"]), mode: 0o644)
    try FileManager.default.createSymbolicLink(atPath: bin + "/link", withDestinationPath: bin + "/xtool")
  }

  func write(_ path: String, _ bytes: [UInt8], mode: Int = 0o755) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
  }

  func remove() { try? FileManager.default.removeItem(at: root) }
}

@Suite struct XClientProgramsTests {
  @Test(
    "which programs load libxcb, directly or through their libraries",
    arguments: [
      ("xtool", true), ("deep", true), ("direct", true), ("origin", true), ("plain", false), ("cycle", false),
      ("missing", false), ("script", false), ("noexec", false), ("link", false), ("absent", false),
    ])
  func classifies(_ name: String, _ isClient: Bool) throws {
    let sys = try FakeSystem("xclients")
    defer { sys.remove() }
    let programs = XClientPrograms(libraryDirectories: [sys.lib])
    #expect(programs.isXClient(directory: sys.bin, name: name) == nil)  // not scanned yet
    programs.scanInBackground([sys.bin])
    programs.waitForScans()
    #expect(programs.isXClient(directory: sys.bin, name: name) == (isClient ? true : nil))
    #expect(programs.count == 4)
  }

  @Test func programDirectoriesAddPathEntries() {
    let dirs = XClientPrograms.programDirectories(path: "/opt/app/bin:relative:/usr/bin::/home/u/.local/bin")
    #expect(Array(dirs.prefix(XClientPrograms.standardDirectories.count)) == XClientPrograms.standardDirectories)
    #expect(Array(dirs.dropFirst(XClientPrograms.standardDirectories.count)) == ["/opt/app/bin", "/home/u/.local/bin"])
    #expect(XClientPrograms.programDirectories(path: nil) == XClientPrograms.standardDirectories)
  }

  @Test func readsLdSoConf() throws {
    let sys = try FakeSystem("ldconf")
    defer { sys.remove() }
    let conf = sys.root.path + "/ld.so.conf"
    try Data("# comment\n/first\ninclude \(sys.root.path)/conf.d/*.conf\n/first\n".utf8).write(
      to: URL(fileURLWithPath: conf))
    try FileManager.default.createDirectory(atPath: sys.root.path + "/conf.d", withIntermediateDirectories: true)
    try Data("/second # trailing\n".utf8).write(to: URL(fileURLWithPath: sys.root.path + "/conf.d/a.conf"))
    let dirs = XClientPrograms.systemLibraryDirectories(confPath: conf)
    #expect(Array(dirs.prefix(2)) == ["/first", "/second"])
    #expect(dirs.contains("/usr/lib/x86_64-linux-gnu") && dirs.last == "/usr/lib")
  }
}

@Suite struct LaunchWatchProgramTests {
  func watch(_ sys: FakeSystem) throws -> (LaunchWatch, XClientPrograms) {
    let programs = XClientPrograms(libraryDirectories: [sys.lib])
    let w = try LaunchWatch(path: sys.libxcb, programDirectories: [sys.bin, sys.bin + "/."], programs: programs)
    programs.waitForScans()
    return (w, programs)
  }

  func touch(_ path: String) { close(open(path, O_RDONLY)) }

  /// An X client program's start is the launch; the libxcb open that follows belongs to it.
  @Test func aProgramStartIsOneLaunchWithItsLibraryOpen() throws {
    let sys = try FakeSystem("progwatch")
    defer { sys.remove() }
    let (w, _) = try watch(sys)
    #expect(w.programDirectories.count == 1)  // two paths of one directory: one watch
    #expect(w.watchedPrograms == 4)  // xtool, deep, direct, origin: each watched on its own
    let t = LaunchWatch.monotonicSeconds()
    touch(sys.bin + "/xtool")
    #expect(w.readLaunches(now: t) == ["xtool"])
    touch(sys.libxcb)
    #expect(w.readLaunches(now: t + 0.01).count == 0)
    // A libxcb open no start announced (a program outside the watched directories).
    touch(sys.libxcb)
    #expect(w.readLaunches(now: t + 0.02) == [nil])
    // Programs that are not X clients, and the directory itself, do not even wake the pump.
    touch(sys.bin + "/plain")
    touch(sys.bin + "/script")
    touch(sys.bin)
    var pending = pollfd(fd: w.fileDescriptor, events: Int16(POLLIN), revents: 0)
    #expect(poll(&pending, 1, 0) == 0)
    #expect(w.readLaunches(now: t + 0.03).count == 0)
    // Start and library open read together.
    touch(sys.bin + "/deep")
    touch(sys.libxcb)
    #expect(w.readLaunches(now: t + 0.04) == ["deep"])
    // A start whose library open never came (a read of the file, not an exec): the next
    // open, later than the window, is a launch of its own.
    touch(sys.bin + "/xtool")
    #expect(w.readLaunches(now: t + 1).count == 1)
    touch(sys.libxcb)
    #expect(w.readLaunches(now: t + 1 + LaunchWatch.libraryOpenWindow + 0.1) == [nil])
  }

  /// A program installed after the scan (written, then renamed into place as dpkg does) is
  /// classified when it appears.
  @Test func aNewProgramIsClassified() throws {
    let sys = try FakeSystem("progwatch-new")
    defer { sys.remove() }
    let (w, programs) = try watch(sys)
    try sys.write(sys.root.path + "/opt/bin/newtool", fakeElf(needed: ["libX11.so.6"]))
    try FileManager.default.moveItem(atPath: sys.root.path + "/opt/bin/newtool", toPath: sys.bin + "/newtool")
    #expect(w.readLaunches().count == 0)
    programs.waitForScans()
    #expect(programs.isXClient(directory: sys.bin, name: "newtool") == true)
    // Reading its header came before its watch: not a start.
    #expect(w.readLaunches().count == 0)
    #expect(w.watchedPrograms == 5)
    touch(sys.bin + "/newtool")
    #expect(w.readLaunches() == ["newtool"])
    // An upgrade renames a new file over an X client program: the new file is watched.
    try sys.write(sys.root.path + "/opt/bin/xtool", fakeElf(needed: ["libX11.so.6", "libm.so.6"]))
    try FileManager.default.removeItem(atPath: sys.bin + "/xtool")
    try FileManager.default.moveItem(atPath: sys.root.path + "/opt/bin/xtool", toPath: sys.bin + "/xtool")
    #expect(w.readLaunches().count == 0)
    programs.waitForScans()
    touch(sys.bin + "/xtool")
    #expect(w.readLaunches() == ["xtool"])
    #expect(w.watchedPrograms == 5)
    // Replaced by a program that is not an X client: no longer one.
    try sys.write(sys.root.path + "/opt/bin/newtool", fakeElf(needed: ["libc.so.6"]))
    try FileManager.default.removeItem(atPath: sys.bin + "/newtool")
    try FileManager.default.moveItem(atPath: sys.root.path + "/opt/bin/newtool", toPath: sys.bin + "/newtool")
    _ = w.readLaunches()
    programs.waitForScans()
    #expect(programs.isXClient(directory: sys.bin, name: "newtool") == nil)
    touch(sys.bin + "/newtool")
    #expect(w.readLaunches().count == 0)
    #expect(w.watchedPrograms == 4)
  }

  /// The daemon's scan of the real program directories finds the capture tools the tests
  /// use (installed by the test command).
  @Test func theRealCaptureToolsAreXClients() throws {
    let programs = XClientPrograms()
    programs.scanInBackground(["/usr/bin"])
    programs.waitForScans()
    for tool in ["xwd", "scrot", "maim", "ffmpeg"] {
      #expect(programs.isXClient(directory: "/usr/bin", name: tool) == true, "\(tool)")
    }
    let importTool = try FileManager.default.destinationOfSymbolicLink(atPath: "/etc/alternatives/import")
    #expect(programs.isXClient(directory: "/usr/bin", name: (importTool as NSString).lastPathComponent) == true)
    #expect(programs.isXClient(directory: "/usr/bin", name: "ls") == nil)
  }
}
