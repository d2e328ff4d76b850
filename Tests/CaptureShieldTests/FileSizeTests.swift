// No file under Sources is over 600 lines, nor any C source or header of the Xorg module
// (xorg/module/*.c, *.h): a file that grows past it holds more than one concern, and is
// split by concern (an extension in a second file, named for what it holds; in the module, a
// file per concern with an internal header) before it grows further. Like
// SingleWriterTests, it reads the sources.

import Foundation
import Testing

/// The repository (this file is Tests/CaptureShieldTests/FileSizeTests.swift).
private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent()

/// Every target's sources.
private let sourcesRoot = repositoryRoot.appendingPathComponent("Sources")

/// The Xorg module's C sources and headers.
private let xorgModuleRoot = repositoryRoot.appendingPathComponent("xorg/module")

enum FileSize {
  /// The most lines a file under Sources, or a C file of the Xorg module, may have.
  static let maxLines = 600

  /// The lines of `text`: a last line without a newline counts too.
  static func lineCount(_ text: String) -> Int {
    var n = 0
    var last: Character = "\n"
    for c in text {
      if c == "\n" { n += 1 }
      last = c
    }
    return last == "\n" ? n : n + 1
  }

  /// Every regular file under `root`, by path relative to it, with its line count.
  static func files(under root: URL) -> [(path: String, lines: Int)] {
    guard let walk = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
    else { return [] }
    var out: [(path: String, lines: Int)] = []
    for case let url as URL in walk {
      guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true,
        let text = try? String(contentsOf: url, encoding: .utf8)
      else { continue }
      out.append((String(url.path.dropFirst(root.path.count + 1)), lineCount(text)))
    }
    return out.sorted { $0.path < $1.path }
  }
}

@Suite("Source file size")
struct FileSizeTests {
  @Test func theCounterCountsLines() {
    #expect(FileSize.lineCount("") == 0)
    #expect(FileSize.lineCount("a") == 1)
    #expect(FileSize.lineCount("a\n") == 1)
    #expect(FileSize.lineCount("a\nb") == 2)
    #expect(FileSize.lineCount("a\n\nb\n") == 3)
  }

  @Test("no file under Sources is over 600 lines")
  func noSourceFileIsOverTheLimit() {
    let files = FileSize.files(under: sourcesRoot)
    // The walk saw the sources (not an empty or wrong folder): the library's main files.
    #expect(files.contains { $0.path == "CaptureShield/Daemon/Watcher.swift" })
    #expect(files.contains { $0.path == "CaptureShieldCore/Engine/Engine.swift" })
    #expect(files.count > 100)
    let over = files.filter { $0.lines > FileSize.maxLines }
    #expect(
      over.isEmpty,
      "over \(FileSize.maxLines) lines (split by concern): \(over.map { "\($0.path) \($0.lines)" }.joined(separator: ", "))"
    )
  }

  @Test("no C source or header of the Xorg module is over 600 lines")
  func noXorgModuleFileIsOverTheLimit() {
    let files = FileSize.files(under: xorgModuleRoot).filter {
      $0.path.hasSuffix(".c") || $0.path.hasSuffix(".h")
    }
    // The walk saw the module (not an empty or wrong folder): its entry, its header.
    #expect(files.contains { $0.path == "module.c" })
    #expect(files.contains { $0.path == "cs.h" })
    #expect(files.count > 20)
    let over = files.filter { $0.lines > FileSize.maxLines }
    #expect(
      over.isEmpty,
      "over \(FileSize.maxLines) lines (split by concern): \(over.map { "xorg/module/\($0.path) \($0.lines)" }.joined(separator: ", "))"
    )
  }
}
