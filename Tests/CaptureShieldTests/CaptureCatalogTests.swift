// The capture-request catalog and RECORD decoding on hand-built bytes. Offsets and opcodes
// here are written from the protocol (xcb-proto XML), not copied from the catalog.

import CaptureShield
import Foundation
import ShieldTestSupport
import Testing

/// Builds a request: header (major, byte 1, length) and little- or big-endian fields.
struct RequestBytes {
  var bytes: [UInt8]
  let bigEndian: Bool

  /// `words`: total length in 4-byte units (header included).
  init(_ major: UInt8, _ byte1: UInt8, words: Int, bigEndian: Bool = false) {
    self.bigEndian = bigEndian
    bytes = [UInt8](repeating: 0, count: words * 4)
    bytes[0] = major
    bytes[1] = byte1
    put16(2, UInt16(words))
  }

  mutating func put16(_ offset: Int, _ v: UInt16) {
    let b = [UInt8(v & 0xff), UInt8(v >> 8)]
    bytes[offset] = bigEndian ? b[1] : b[0]
    bytes[offset + 1] = bigEndian ? b[0] : b[1]
  }

  mutating func put32(_ offset: Int, _ v: UInt32) {
    let b = (0..<4).map { UInt8((v >> (8 * UInt32($0))) & 0xff) }
    for i in 0..<4 { bytes[offset + i] = bigEndian ? b[3 - i] : b[i] }
  }

  mutating func put8(_ offset: Int, _ v: UInt8) { bytes[offset] = v }

  func with(_ body: (inout RequestBytes) -> Void) -> [UInt8] {
    var copy = self
    body(&copy)
    return copy.bytes
  }

  /// The same request in BIG-REQUESTS form: length 0, then the 32-bit length, then the rest.
  static func bigRequestForm(_ normal: [UInt8], bigEndian: Bool = false) -> [UInt8] {
    let words = UInt32(normal.count / 4 + 1)
    var lengthBytes = (0..<4).map { UInt8((words >> (8 * UInt32($0))) & 0xff) }
    if bigEndian { lengthBytes.reverse() }
    return [normal[0], normal[1], 0, 0] + lengthBytes + normal[4...]
  }
}

/// One classification case.
struct ClassifyCase: Sendable, CustomStringConvertible {
  let name: String
  let bytes: [UInt8]
  let expected: CaptureRequest?
  var bigEndian = false
  var description: String { name }
}

enum Fixture {
  static let mask: UInt32 = 0x001f_ffff
  static let base: UInt32 = 0x0040_0000
  static let own: UInt32 = 0x0040_0005
  static let ownPixmap: UInt32 = 0x0040_0009
  static let root: UInt32 = 0x0000_03b6
  static let foreign: UInt32 = 0x0060_0010
  /// A foreign window the caller says is secure.
  static let secure: UInt32 = 0x0080_0001
  static let extensions: [String: UInt8] = [
    "SHAPE": 129, "MIT-SHM": 130, "XFIXES": 138, "RENDER": 139, "Composite": 142, "DAMAGE": 143,
    "DOUBLE-BUFFER": 145, "RECORD": 146, "GLX": 150, "DRI2": 155, "DRI3": 156,
  ]
  static let resolved = CaptureCatalog.standard.resolved(extensions: extensions)

  static func classify(_ bytes: [UInt8], bigEndian: Bool = false) -> CaptureRequest? {
    resolved.classify(bytes, clientBase: base, resourceMask: mask, bigEndian: bigEndian) { $0 == secure }
  }

  static func req(_ kind: String, _ target: UInt32? = nil, bypass: Bool = false) -> CaptureRequest {
    CaptureRequest(kind: kind, target: target, bypassesShield: bypass)
  }
}

extension ClassifyCase {
  typealias F = Fixture

  // MARK: Core
  static let core: [ClassifyCase] = [
    ClassifyCase(
      name: "GetImage on the root",
      bytes: RequestBytes(73, 2, words: 5).with {
        $0.put32(4, F.root)
        $0.put16(12, 640)
        $0.put16(14, 480)
        $0.put32(16, ~0)
      }, expected: F.req("GetImage", F.root)),
    ClassifyCase(
      name: "GetImage on a foreign client's pixmap",
      bytes: RequestBytes(73, 2, words: 5).with { $0.put32(4, F.foreign) }, expected: F.req("GetImage", F.foreign)),
    ClassifyCase(
      name: "GetImage on an own pixmap", bytes: RequestBytes(73, 2, words: 5).with { $0.put32(4, F.ownPixmap) },
      expected: nil),
    ClassifyCase(
      name: "ReparentWindow of a secure window",
      bytes: RequestBytes(7, 0, words: 4).with {
        $0.put32(4, F.secure)
        $0.put32(8, F.own)
      }, expected: F.req("ReparentWindow", F.secure)),
    ClassifyCase(
      name: "ReparentWindow of a secure window to the root (a window manager's exit): nothing becomes readable",
      bytes: RequestBytes(7, 0, words: 4).with {
        $0.put32(4, F.secure)
        $0.put32(8, F.root)
      }, expected: nil),
    ClassifyCase(
      name: "ReparentWindow of a secure window into another client's window: not the reader's (its GetImage counts)",
      bytes: RequestBytes(7, 0, words: 4).with {
        $0.put32(4, F.secure)
        $0.put32(8, F.foreign)
      }, expected: nil),
    ClassifyCase(
      name: "ReparentWindow of a foreign window that is not secure (a window manager's daily work)",
      bytes: RequestBytes(7, 0, words: 4).with {
        $0.put32(4, F.foreign)
        $0.put32(8, F.own)
      }, expected: nil),
    ClassifyCase(
      name: "ReparentWindow of an own window", bytes: RequestBytes(7, 0, words: 4).with { $0.put32(4, F.own) },
      expected: nil),
    ClassifyCase(
      name: "GetImage on None", bytes: RequestBytes(73, 2, words: 5).with { $0.put32(4, 0) }, expected: nil),
    ClassifyCase(
      name: "CopyArea from the root into an own pixmap",
      bytes: RequestBytes(62, 0, words: 7).with {
        $0.put32(4, F.root)
        $0.put32(8, F.ownPixmap)
        $0.put32(12, F.own)
      }, expected: F.req("CopyArea", F.root)),
    ClassifyCase(
      name: "CopyArea from an own pixmap into a foreign window (writes, not reads)",
      bytes: RequestBytes(62, 0, words: 7).with {
        $0.put32(4, F.ownPixmap)
        $0.put32(8, F.foreign)
      }, expected: nil),
    ClassifyCase(
      name: "CopyPlane from a foreign drawable",
      bytes: RequestBytes(63, 0, words: 8).with {
        $0.put32(4, F.foreign)
        $0.put32(8, F.ownPixmap)
        $0.put32(28, 1)
      }, expected: F.req("CopyPlane", F.foreign)),
    ClassifyCase(
      name: "CreateGC with a foreign tile (after a foreground value)",
      bytes: RequestBytes(55, 0, words: 6).with {
        $0.put32(4, F.own)
        $0.put32(8, F.ownPixmap)
        $0.put32(12, 1 << 2 | 1 << 10)
        $0.put32(16, 0xff_ffff)
        $0.put32(20, F.foreign)
      }, expected: F.req("CreateGC(tile)", F.foreign)),
    ClassifyCase(
      name: "CreateGC with an own tile",
      bytes: RequestBytes(55, 0, words: 5).with {
        $0.put32(12, 1 << 10)
        $0.put32(16, F.ownPixmap)
      }, expected: nil),
    ClassifyCase(
      name: "ChangeGC: own stipple, foreign clip mask",
      bytes: RequestBytes(56, 0, words: 5).with {
        $0.put32(4, F.own)
        $0.put32(8, 1 << 11 | 1 << 19)
        $0.put32(12, F.ownPixmap)
        $0.put32(16, F.foreign)
      }, expected: F.req("ChangeGC(clip-mask)", F.foreign)),
    ClassifyCase(
      name: "ChangeGC: foreign stipple",
      bytes: RequestBytes(56, 0, words: 4).with {
        $0.put32(8, 1 << 11)
        $0.put32(12, F.foreign)
      }, expected: F.req("ChangeGC(stipple)", F.foreign)),
    ClassifyCase(
      name: "ChangeGC: clip mask None",
      bytes: RequestBytes(56, 0, words: 4).with { $0.put32(8, 1 << 19) }, expected: nil),
    ClassifyCase(
      name: "ChangeGC: only a foreground (the common case)",
      bytes: RequestBytes(56, 0, words: 4).with {
        $0.put32(8, 1 << 2)
        $0.put32(12, F.foreign)
      }, expected: nil),
    ClassifyCase(
      name: "CreateWindow with a foreign background pixmap",
      bytes: RequestBytes(1, 24, words: 10).with {
        $0.put32(4, F.own)
        $0.put32(8, F.root)
        $0.put32(28, 1 << 0 | 1 << 11)
        $0.put32(32, F.foreign)
        $0.put32(36, 0x8000)
      }, expected: F.req("CreateWindow(background-pixmap)", F.foreign)),
    ClassifyCase(
      name: "CreateWindow with background ParentRelative",
      bytes: RequestBytes(1, 24, words: 9).with {
        $0.put32(8, F.root)
        $0.put32(28, 1 << 0)
        $0.put32(32, 1)
      }, expected: nil),
    ClassifyCase(
      name: "ChangeWindowAttributes with a foreign border pixmap",
      bytes: RequestBytes(2, 0, words: 5).with {
        $0.put32(4, F.own)
        $0.put32(8, 1 << 2 | 1 << 11)
        $0.put32(12, F.foreign)
        $0.put32(16, 0x20_0000)
      }, expected: F.req("ChangeWindowAttributes(border-pixmap)", F.foreign)),
    ClassifyCase(
      name: "ChangeWindowAttributes: event mask on a foreign window (a window manager)",
      bytes: RequestBytes(2, 0, words: 4).with {
        $0.put32(4, F.foreign)
        $0.put32(8, 1 << 11)
        $0.put32(12, 0x20_0000)
      }, expected: nil),
    ClassifyCase(
      name: "CreateCursor from a foreign source pixmap",
      bytes: RequestBytes(93, 0, words: 8).with {
        $0.put32(4, F.own)
        $0.put32(8, F.foreign)
      }, expected: F.req("CreateCursor", F.foreign)),
    ClassifyCase(
      name: "CreateCursor with an own source and a foreign mask",
      bytes: RequestBytes(93, 0, words: 8).with {
        $0.put32(8, F.ownPixmap)
        $0.put32(12, F.foreign)
      }, expected: F.req("CreateCursor(mask)", F.foreign)),
    ClassifyCase(name: "GrabServer", bytes: RequestBytes(36, 0, words: 1).bytes, expected: F.req("GrabServer")),
    ClassifyCase(name: "UngrabServer", bytes: RequestBytes(37, 0, words: 1).bytes, expected: nil),
    ClassifyCase(
      name: "PutImage into a foreign window (writes)",
      bytes: RequestBytes(72, 2, words: 7).with { $0.put32(4, F.foreign) }, expected: nil),
  ]

  // MARK: Extensions
  static let extensions: [ClassifyCase] = [
    ClassifyCase(
      name: "MIT-SHM ShmGetImage on the root",
      bytes: RequestBytes(130, 4, words: 8).with {
        $0.put32(4, F.root)
        $0.put32(16, ~0)
        $0.put8(20, 2)
      }, expected: F.req("MIT-SHM ShmGetImage", F.root)),
    ClassifyCase(
      name: "MIT-SHM ShmGetImage on an own pixmap",
      bytes: RequestBytes(130, 4, words: 8).with { $0.put32(4, F.ownPixmap) }, expected: nil),
    ClassifyCase(
      name: "MIT-SHM Attach", bytes: RequestBytes(130, 1, words: 4).bytes, expected: F.req("MIT-SHM Attach")),
    ClassifyCase(
      name: "MIT-SHM AttachFd", bytes: RequestBytes(130, 6, words: 3).bytes, expected: F.req("MIT-SHM AttachFd")),
    ClassifyCase(
      name: "MIT-SHM CreateSegment", bytes: RequestBytes(130, 7, words: 4).bytes,
      expected: F.req("MIT-SHM CreateSegment")),
    ClassifyCase(
      name: "MIT-SHM PutImage (writes)", bytes: RequestBytes(130, 3, words: 10).with { $0.put32(4, F.foreign) },
      expected: nil),
    ClassifyCase(
      name: "Composite RedirectSubwindows(secure window, Manual): bypasses the shield",
      bytes: RequestBytes(142, 2, words: 3).with {
        $0.put32(4, F.secure)
        $0.put8(8, 1)
      }, expected: F.req("Composite RedirectSubwindows(Manual)", F.secure, bypass: true)),
    ClassifyCase(
      name: "Composite RedirectSubwindows(root, Manual): a compositor",
      bytes: RequestBytes(142, 2, words: 3).with {
        $0.put32(4, F.root)
        $0.put8(8, 1)
      }, expected: F.req("Composite RedirectSubwindows(Manual)", F.root)),
    ClassifyCase(
      name: "Composite RedirectWindow(secure window, Manual)",
      bytes: RequestBytes(142, 1, words: 3).with {
        $0.put32(4, F.secure)
        $0.put8(8, 1)
      }, expected: F.req("Composite RedirectWindow(Manual)", F.secure, bypass: true)),
    ClassifyCase(
      name: "Composite RedirectSubwindows(root, Automatic): maim",
      bytes: RequestBytes(142, 2, words: 3).with { $0.put32(4, F.root) },
      expected: F.req("Composite RedirectSubwindows(Automatic)", F.root)),
    ClassifyCase(
      name: "Composite RedirectWindow(secure window, Automatic): no bypass",
      bytes: RequestBytes(142, 1, words: 3).with { $0.put32(4, F.secure) },
      expected: F.req("Composite RedirectWindow(Automatic)", F.secure)),
    ClassifyCase(
      name: "Composite RedirectSubwindows(own window, Manual)",
      bytes: RequestBytes(142, 2, words: 3).with {
        $0.put32(4, F.own)
        $0.put8(8, 1)
      }, expected: nil),
    ClassifyCase(
      name: "Composite RedirectSubwindows with an invalid update mode",
      bytes: RequestBytes(142, 2, words: 3).with {
        $0.put32(4, F.secure)
        $0.put8(8, 2)
      }, expected: nil),
    ClassifyCase(
      name: "Composite NameWindowPixmap of a foreign window",
      bytes: RequestBytes(142, 6, words: 3).with {
        $0.put32(4, F.foreign)
        $0.put32(8, F.ownPixmap)
      }, expected: F.req("Composite NameWindowPixmap", F.foreign)),
    ClassifyCase(
      name: "Composite GetOverlayWindow", bytes: RequestBytes(142, 7, words: 2).with { $0.put32(4, F.root) },
      expected: F.req("Composite GetOverlayWindow", F.root)),
    ClassifyCase(
      name: "RENDER CreatePicture on the root: maim",
      bytes: RequestBytes(139, 4, words: 5).with {
        $0.put32(4, F.own)
        $0.put32(8, F.root)
        $0.put32(12, 0x2a)
      }, expected: F.req("RENDER CreatePicture", F.root)),
    ClassifyCase(
      name: "RENDER CreatePicture on an own pixmap",
      bytes: RequestBytes(139, 4, words: 5).with {
        $0.put32(4, F.own)
        $0.put32(8, F.ownPixmap)
      }, expected: nil),
    ClassifyCase(
      name: "RENDER CreatePicture on an own pixmap with a foreign alpha map",
      bytes: RequestBytes(139, 4, words: 7).with {
        $0.put32(8, F.ownPixmap)
        $0.put32(16, 1 << 0 | 1 << 1)
        $0.put32(20, 1)
        $0.put32(24, F.foreign)
      }, expected: F.req("RENDER CreatePicture(alpha-map)", F.foreign)),
    ClassifyCase(
      name: "RENDER ChangePicture with a foreign clip mask",
      bytes: RequestBytes(139, 5, words: 4).with {
        $0.put32(4, F.own)
        $0.put32(8, 1 << 6)
        $0.put32(12, F.foreign)
      }, expected: F.req("RENDER ChangePicture(clip-mask)", F.foreign)),
    ClassifyCase(
      name: "RENDER Composite from a foreign picture",
      bytes: RequestBytes(139, 8, words: 9).with {
        $0.put8(4, 1)
        $0.put32(8, F.foreign)
        $0.put32(16, F.own)
      }, expected: F.req("RENDER Composite", F.foreign)),
    ClassifyCase(
      name: "RENDER Composite with a foreign mask",
      bytes: RequestBytes(139, 8, words: 9).with {
        $0.put32(8, F.own)
        $0.put32(12, F.foreign)
        $0.put32(16, F.own)
      }, expected: F.req("RENDER Composite(mask)", F.foreign)),
    ClassifyCase(
      name: "RENDER Composite from an own picture into a foreign one (writes)",
      bytes: RequestBytes(139, 8, words: 9).with {
        $0.put32(8, F.own)
        $0.put32(16, F.foreign)
      }, expected: nil),
    ClassifyCase(
      name: "RENDER Trapezoids", bytes: RequestBytes(139, 10, words: 6).with { $0.put32(8, F.foreign) },
      expected: F.req("RENDER Trapezoids", F.foreign)),
    ClassifyCase(
      name: "RENDER Triangles", bytes: RequestBytes(139, 11, words: 6).with { $0.put32(8, F.foreign) },
      expected: F.req("RENDER Triangles", F.foreign)),
    ClassifyCase(
      name: "RENDER TriStrip", bytes: RequestBytes(139, 12, words: 6).with { $0.put32(8, F.foreign) },
      expected: F.req("RENDER TriStrip", F.foreign)),
    ClassifyCase(
      name: "RENDER TriFan", bytes: RequestBytes(139, 13, words: 6).with { $0.put32(8, F.foreign) },
      expected: F.req("RENDER TriFan", F.foreign)),
    ClassifyCase(
      name: "RENDER CompositeGlyphs8", bytes: RequestBytes(139, 23, words: 7).with { $0.put32(8, F.foreign) },
      expected: F.req("RENDER CompositeGlyphs8", F.foreign)),
    ClassifyCase(
      name: "RENDER CompositeGlyphs16", bytes: RequestBytes(139, 24, words: 7).with { $0.put32(8, F.foreign) },
      expected: F.req("RENDER CompositeGlyphs16", F.foreign)),
    ClassifyCase(
      name: "RENDER CompositeGlyphs32", bytes: RequestBytes(139, 25, words: 7).with { $0.put32(8, F.foreign) },
      expected: F.req("RENDER CompositeGlyphs32", F.foreign)),
    ClassifyCase(
      name: "RENDER CreateCursor from a foreign picture",
      bytes: RequestBytes(139, 27, words: 4).with {
        $0.put32(4, F.own)
        $0.put32(8, F.foreign)
      }, expected: F.req("RENDER CreateCursor", F.foreign)),
    ClassifyCase(
      name: "RENDER FillRectangles (no source)", bytes: RequestBytes(139, 26, words: 5).with { $0.put32(8, F.foreign) },
      expected: nil),
    ClassifyCase(
      name: "DAMAGE Create on the root",
      bytes: RequestBytes(143, 1, words: 4).with {
        $0.put32(4, F.own)
        $0.put32(8, F.root)
        $0.put8(12, 3)
      }, expected: F.req("DAMAGE Create", F.root)),
    ClassifyCase(
      name: "XFIXES GetCursorImage", bytes: RequestBytes(138, 4, words: 1).bytes,
      expected: F.req("XFIXES GetCursorImage")),
    ClassifyCase(
      name: "XFIXES GetCursorImageAndName", bytes: RequestBytes(138, 25, words: 1).bytes,
      expected: F.req("XFIXES GetCursorImageAndName")),
    ClassifyCase(
      name: "XFIXES CreateRegionFromBitmap of a foreign bitmap",
      bytes: RequestBytes(138, 6, words: 3).with {
        $0.put32(4, F.own)
        $0.put32(8, F.foreign)
      }, expected: F.req("XFIXES CreateRegionFromBitmap", F.foreign)),
    ClassifyCase(
      name: "XFIXES CreateRegionFromWindow (shape only)",
      bytes: RequestBytes(138, 7, words: 4).with { $0.put32(8, F.foreign) }, expected: nil),
    ClassifyCase(
      name: "SHAPE Mask with a foreign bitmap",
      bytes: RequestBytes(129, 2, words: 5).with {
        $0.put32(8, F.own)
        $0.put32(16, F.foreign)
      }, expected: F.req("SHAPE Mask", F.foreign)),
    ClassifyCase(
      name: "DOUBLE-BUFFER AllocateBackBuffer of a foreign window",
      bytes: RequestBytes(145, 1, words: 4).with {
        $0.put32(4, F.foreign)
        $0.put32(8, F.own)
      }, expected: F.req("DOUBLE-BUFFER AllocateBackBuffer", F.foreign)),
    ClassifyCase(
      name: "GLX MakeCurrent on a foreign window",
      bytes: RequestBytes(150, 5, words: 4).with {
        $0.put32(4, F.foreign)
        $0.put32(8, F.own)
      }, expected: F.req("GLX MakeCurrent", F.foreign)),
    ClassifyCase(
      name: "GLX MakeContextCurrent reading a foreign window",
      bytes: RequestBytes(150, 26, words: 5).with {
        $0.put32(8, F.own)
        $0.put32(12, F.foreign)
      }, expected: F.req("GLX MakeContextCurrent(read)", F.foreign)),
    ClassifyCase(
      name: "GLX CreateGLXPixmap on a foreign pixmap",
      bytes: RequestBytes(150, 13, words: 5).with { $0.put32(12, F.foreign) },
      expected: F.req("GLX CreateGLXPixmap", F.foreign)),
    ClassifyCase(
      name: "GLX CreatePixmap on a foreign pixmap",
      bytes: RequestBytes(150, 22, words: 6).with { $0.put32(12, F.foreign) },
      expected: F.req("GLX CreatePixmap", F.foreign)),
    ClassifyCase(
      name: "GLX CreateWindow on a foreign window",
      bytes: RequestBytes(150, 31, words: 6).with { $0.put32(12, F.foreign) },
      expected: F.req("GLX CreateWindow", F.foreign)),
    ClassifyCase(
      name: "DRI2 GetBuffers", bytes: RequestBytes(155, 5, words: 3).with { $0.put32(4, F.foreign) },
      expected: F.req("DRI2 GetBuffers", F.foreign)),
    ClassifyCase(
      name: "DRI2 GetBuffersWithFormat", bytes: RequestBytes(155, 7, words: 3).with { $0.put32(4, F.foreign) },
      expected: F.req("DRI2 GetBuffersWithFormat", F.foreign)),
    ClassifyCase(
      name: "DRI3 BufferFromPixmap", bytes: RequestBytes(156, 3, words: 2).with { $0.put32(4, F.foreign) },
      expected: F.req("DRI3 BufferFromPixmap", F.foreign)),
    ClassifyCase(
      name: "DRI3 BuffersFromPixmap", bytes: RequestBytes(156, 8, words: 2).with { $0.put32(4, F.foreign) },
      expected: F.req("DRI3 BuffersFromPixmap", F.foreign)),
    ClassifyCase(
      name: "RECORD CreateContext", bytes: RequestBytes(146, 1, words: 5).bytes, expected: F.req("RECORD CreateContext")
    ),
    ClassifyCase(
      name: "RECORD RegisterClients", bytes: RequestBytes(146, 2, words: 5).bytes,
      expected: F.req("RECORD RegisterClients")),
    ClassifyCase(
      name: "an extension the map does not know (major 200)",
      bytes: RequestBytes(200, 4, words: 8).with { $0.put32(4, F.root) }, expected: nil),
  ]

  // MARK: Byte order, BIG-REQUESTS
  static let encodings: [ClassifyCase] = [
    ClassifyCase(
      name: "GetImage from a big-endian client",
      bytes: RequestBytes(73, 2, words: 5, bigEndian: true).with { $0.put32(4, F.root) },
      expected: F.req("GetImage", F.root), bigEndian: true),
    ClassifyCase(
      name: "Composite RedirectSubwindows(Manual) from a big-endian client",
      bytes: RequestBytes(142, 2, words: 3, bigEndian: true).with {
        $0.put32(4, F.secure)
        $0.put8(8, 1)
      }, expected: F.req("Composite RedirectSubwindows(Manual)", F.secure, bypass: true), bigEndian: true),
    ClassifyCase(
      name: "ChangeGC tile from a big-endian client",
      bytes: RequestBytes(56, 0, words: 5, bigEndian: true).with {
        $0.put32(8, 1 << 3 | 1 << 10)
        $0.put32(12, 0)
        $0.put32(16, F.foreign)
      }, expected: F.req("ChangeGC(tile)", F.foreign), bigEndian: true),
    ClassifyCase(
      name: "GetImage in BIG-REQUESTS form",
      bytes: RequestBytes.bigRequestForm(RequestBytes(73, 2, words: 5).with { $0.put32(4, F.root) }),
      expected: F.req("GetImage", F.root)),
    ClassifyCase(
      name: "MIT-SHM ShmGetImage in BIG-REQUESTS form, big-endian",
      bytes: RequestBytes.bigRequestForm(
        RequestBytes(130, 4, words: 8, bigEndian: true).with { $0.put32(4, F.root) }, bigEndian: true),
      expected: F.req("MIT-SHM ShmGetImage", F.root), bigEndian: true),
    ClassifyCase(
      name: "CreateGC with a foreign tile in BIG-REQUESTS form",
      bytes: RequestBytes.bigRequestForm(
        RequestBytes(55, 0, words: 5).with {
          $0.put32(12, 1 << 10)
          $0.put32(16, F.foreign)
        }), expected: F.req("CreateGC(tile)", F.foreign)),
    ClassifyCase(
      name: "Composite RedirectSubwindows(Manual) in BIG-REQUESTS form",
      bytes: RequestBytes.bigRequestForm(
        RequestBytes(142, 2, words: 3).with {
          $0.put32(4, F.secure)
          $0.put8(8, 1)
        }), expected: F.req("Composite RedirectSubwindows(Manual)", F.secure, bypass: true)),
  ]

  // MARK: Malformed
  static let malformed: [ClassifyCase] = [
    ClassifyCase(name: "empty", bytes: [], expected: nil),
    ClassifyCase(name: "one byte", bytes: [73], expected: nil),
    ClassifyCase(name: "three bytes", bytes: [73, 2, 5], expected: nil),
    ClassifyCase(name: "GrabServer with length 0 and nothing else", bytes: [36, 0, 0, 0], expected: nil),
    ClassifyCase(name: "length 0, extended length 1 (too small)", bytes: [73, 2, 0, 0, 1, 0, 0, 0], expected: nil),
    ClassifyCase(
      name: "length 0, extended length 0xffffffff",
      bytes: [73, 2, 0, 0, 0xff, 0xff, 0xff, 0xff] + [UInt8](repeating: 0xb6, count: 16), expected: nil),
    ClassifyCase(
      name: "GetImage truncated to 12 bytes (declares 20)",
      bytes: Array(RequestBytes(73, 2, words: 5).with { $0.put32(4, F.root) }.prefix(12)), expected: nil),
    ClassifyCase(
      name: "GetImage declaring 1 word (field out of the request)",
      bytes: RequestBytes(73, 2, words: 5).with {
        $0.put32(4, F.root)
        $0.put16(2, 1)
      }, expected: nil),
    ClassifyCase(
      name: "CreateGC whose tile value lies past the declared length",
      bytes: RequestBytes(55, 0, words: 4).with { $0.put32(12, 1 << 10) } + [0x10, 0, 0x60, 0], expected: nil),
    ClassifyCase(
      name: "ChangeGC with every mask bit set and no values",
      bytes: RequestBytes(56, 0, words: 3).with { $0.put32(8, ~0) }, expected: nil),
    ClassifyCase(
      name: "Composite RedirectSubwindows cut before the update byte",
      bytes: RequestBytes(142, 2, words: 2).with { $0.put32(4, F.secure) }, expected: nil),
    ClassifyCase(name: "all 0xff", bytes: [UInt8](repeating: 0xff, count: 64), expected: nil),
    ClassifyCase(name: "all zero", bytes: [UInt8](repeating: 0, count: 64), expected: nil),
  ]
}

@Suite("Capture request catalog")
struct CaptureCatalogTests {
  @Test("core requests", arguments: ClassifyCase.core)
  func core(_ c: ClassifyCase) {
    #expect(Fixture.classify(c.bytes, bigEndian: c.bigEndian) == c.expected)
  }

  @Test("extension requests", arguments: ClassifyCase.extensions)
  func extensions(_ c: ClassifyCase) {
    #expect(Fixture.classify(c.bytes, bigEndian: c.bigEndian) == c.expected)
  }

  @Test("byte order and BIG-REQUESTS", arguments: ClassifyCase.encodings)
  func encodings(_ c: ClassifyCase) {
    #expect(Fixture.classify(c.bytes, bigEndian: c.bigEndian) == c.expected)
  }

  @Test("truncated and garbage bytes give nil", arguments: ClassifyCase.malformed)
  func malformed(_ c: ClassifyCase) {
    #expect(Fixture.classify(c.bytes) == nil)
    #expect(Fixture.classify(c.bytes, bigEndian: true) == nil)
  }

  @Test("every catalog entry is exercised by a case")
  func everyEntryCovered() {
    let cases = ClassifyCase.core + ClassifyCase.extensions + ClassifyCase.encodings
    let reported = Set(cases.compactMap { $0.expected?.kind })
    for e in CaptureCatalog.standard.entries {
      #expect(e.allKinds.contains { reported.contains($0) }, "no case for \(e.kind)")
    }
  }

  @Test("a request from another client base on the same drawable is capture; from its owner it is not")
  func ownership() {
    let bytes = RequestBytes(73, 2, words: 5).with { $0.put32(4, 0x0060_0010) }
    let catalog = CaptureCatalog.standard
    #expect(
      catalog.classify(bytes, extensions: [:], clientBase: 0x0060_0000, resourceMask: 0x1f_ffff) == nil)
    #expect(
      catalog.classify(bytes, extensions: [:], clientBase: 0x0040_0000, resourceMask: 0x1f_ffff)
        == CaptureRequest(kind: "GetImage", target: 0x0060_0010))
  }

  @Test("extension entries are dropped when the server lacks the extension")
  func absentExtension() {
    let resolved = CaptureCatalog.standard.resolved(extensions: ["MIT-SHM": 130])
    let shm = RequestBytes(130, 4, words: 8).with { $0.put32(4, Fixture.root) }
    let render = RequestBytes(139, 4, words: 5).with { $0.put32(8, Fixture.root) }
    #expect(
      resolved.classify(shm, clientBase: Fixture.base, resourceMask: Fixture.mask)
        == CaptureRequest(kind: "MIT-SHM ShmGetImage", target: Fixture.root))
    #expect(resolved.classify(render, clientBase: Fixture.base, resourceMask: Fixture.mask) == nil)
    #expect(!resolved.activeEntries.contains { $0.extensionName == "RENDER" })
  }

  @Test("the recorded ranges are the narrowest that cover the catalog")
  func ranges() {
    let r = Fixture.resolved
    #expect(r.coreRanges == [1...2, 7...7, 36...36, 55...56, 62...63, 73...73, 93...93])
    let ext = Dictionary(grouping: r.extensionRanges, by: \.major).mapValues { $0.map(\.minors) }
    #expect(ext[130] == [1...1, 4...4, 6...7])  // MIT-SHM
    #expect(ext[142] == [1...2, 6...7])  // Composite
    #expect(ext[139] == [4...5, 8...8, 10...13, 23...25, 27...27])  // RENDER
    #expect(ext[138] == [4...4, 6...6, 25...25])  // XFIXES
    #expect(ext[143] == [1...1])  // DAMAGE
    #expect(ext[150] == [5...5, 13...13, 22...22, 26...26, 31...31])  // GLX
    let lean = CaptureCatalog.standard.withoutFrequentRequests.resolved(extensions: Fixture.extensions)
    #expect(lean.coreRanges == [1...2, 7...7, 36...36, 55...55, 63...63, 73...73, 93...93])
  }

  @Test(
    "CreateWindow, DestroyWindow, CreatePixmap and FreePixmap are recorded whenever own reads are: they keep DrawableKinds"
  )
  func createWindowRecorded() {
    let windowReaders = CaptureCatalog.standard.windowReaders.resolved(extensions: Fixture.extensions)
    #expect(!windowReaders.coreRanges.contains { $0.contains(1) })
    #expect(windowReaders.recordsCreations)
    #expect(windowReaders.recordedCoreRanges.first == 1...1)
    #expect(
      Set(windowReaders.recordedCoreRanges.flatMap { Array($0) })
        == Set(windowReaders.coreRanges.flatMap { Array($0) } + [1, 4, 53, 54]))
    #expect(
      Set(Fixture.resolved.recordedCoreRanges.flatMap { Array($0) })
        == Set(Fixture.resolved.coreRanges.flatMap { Array($0) } + [4, 53, 54]))
    let none = CaptureCatalog(entries: []).resolved(extensions: Fixture.extensions)  // server enforcement
    #expect(none.recordedCoreRanges.isEmpty)
  }

  @Test(
    "drawableChange: the id a CreateWindow, DestroyWindow, CreatePixmap or FreePixmap names, nil otherwise",
    arguments: [
      (
        RequestBytes(1, 24, words: 8).with { $0.put32(4, 0x0040_0007) }, false,
        Optional(DrawableChange.createdWindow(0x0040_0007))
      ),
      (
        RequestBytes(1, 24, words: 8, bigEndian: true).with { $0.put32(4, 0x0040_0007) }, true,
        .createdWindow(0x0040_0007)
      ),
      (RequestBytes(53, 24, words: 4).with { $0.put32(4, 0x0040_0008) }, false, .createdPixmap(0x0040_0008)),
      (
        RequestBytes(53, 24, words: 4, bigEndian: true).with { $0.put32(4, 0x0040_0008) }, true,
        .createdPixmap(0x0040_0008)
      ),
      (RequestBytes(54, 0, words: 2).with { $0.put32(4, 0x0040_0009) }, false, .freedPixmap(0x0040_0009)),
      (RequestBytes(4, 0, words: 2).with { $0.put32(4, 0x0040_0007) }, false, .destroyedWindow(0x0040_0007)),
      (RequestBytes(5, 0, words: 2).with { $0.put32(4, 0x0040_0007) }, false, nil),  // DestroySubwindows
      (Array(RequestBytes(1, 24, words: 8).bytes.prefix(6)), false, nil),  // short
      (Array(RequestBytes(53, 24, words: 4).bytes.prefix(7)), false, nil),  // short
    ])
  func drawableChange(request: [UInt8], bigEndian: Bool, expected: DrawableChange?) {
    #expect(ResolvedCaptureCatalog.drawableChange(request, bigEndian: bigEndian) == expected)
  }

  @Test(
    "drawableChange(recorded:): NameWindowPixmap's pixmap is a pixmap, core changes as before, nil without Composite",
    arguments: [
      (
        RequestBytes(142, 6, words: 3).with {
          $0.put32(4, 0x0080_0001)
          $0.put32(8, 0x0040_000a)
        }, false, true, Optional(DrawableChange.createdPixmap(0x0040_000a))
      ),
      (
        RequestBytes(142, 6, words: 3, bigEndian: true).with {
          $0.put32(4, 0x0080_0001)
          $0.put32(8, 0x0040_000a)
        }, true, true, .createdPixmap(0x0040_000a)
      ),
      (RequestBytes(53, 24, words: 4).with { $0.put32(4, 0x0040_0008) }, false, true, .createdPixmap(0x0040_0008)),
      // Composite RedirectWindow names no pixmap
      (RequestBytes(142, 1, words: 3).with { $0.put32(4, 0x0080_0001) }, false, true, nil),
      // major 142 is not Composite on this server
      (RequestBytes(142, 6, words: 3).with { $0.put32(8, 0x0040_000a) }, false, false, nil),
      (Array(RequestBytes(142, 6, words: 3).bytes.prefix(10)), false, true, nil),  // short
    ])
  func drawableChangeRecorded(request: [UInt8], bigEndian: Bool, composite: Bool, expected: DrawableChange?) {
    let catalog = composite ? Fixture.resolved : CaptureCatalog.standard.resolved(extensions: ["MIT-SHM": 130])
    #expect(catalog.drawableChange(recorded: request, bigEndian: bigEndian) == expected)
  }

  @Test("sessions: pixel reads and manual redirection start one, indicators do not")
  func sessions() {
    let c = CaptureCatalog.standard
    #expect(c.startsSession(CaptureRequest(kind: "GetImage", target: 1)))
    #expect(c.startsSession(CaptureRequest(kind: "CreateGC(tile)", target: 1)))
    #expect(c.startsSession(CaptureRequest(kind: "Composite RedirectSubwindows(Manual)", target: 1)))
    #expect(!c.startsSession(CaptureRequest(kind: "GrabServer")))
    #expect(!c.startsSession(CaptureRequest(kind: "MIT-SHM Attach")))
    #expect(!c.startsSession(CaptureRequest(kind: "XFIXES GetCursorImage")))
    #expect(!c.startsSession(CaptureRequest(kind: "Composite RedirectSubwindows(Automatic)", target: 1)))
    #expect(c.startsSession(CaptureRequest(kind: "something new")))
    #expect(
      c.startsSession(CaptureRequest(kind: "Composite RedirectWindow(Automatic)", target: 1, bypassesShield: true)))
    for e in c.entries where e.role == .readsPixels { #expect(e.startsSession, "\(e.kind)") }
    let kinds = c.entries.flatMap(\.allKinds)
    #expect(Set(kinds).count == kinds.count, "duplicate kinds")
  }

  /// The table between the markers must be `markdownTable()`. Run with
  /// CAPTURESHIELD_WRITE_DOCS=1 to rewrite it after changing the catalog.
  @Test("docs/capture-requests.md carries the catalog's table")
  func docsInSync() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let url = root.appendingPathComponent("docs/capture-requests.md")
    let doc = try String(contentsOf: url, encoding: .utf8)
    let begin = "<!-- catalog-table:begin -->\n"
    let end = "<!-- catalog-table:end -->"
    let table = CaptureCatalog.standard.markdownTable()
    guard let b = doc.range(of: begin), let e = doc.range(of: end, range: b.upperBound..<doc.endIndex) else {
      Issue.record("markers missing in \(url.path)")
      return
    }
    let current = String(doc[b.upperBound..<e.lowerBound])
    if current != table, !(ProcessInfo.processInfo.environment["CAPTURESHIELD_WRITE_DOCS"] ?? "").isEmpty {
      try (String(doc[..<b.upperBound]) + table + String(doc[e.lowerBound...])).write(
        to: url, atomically: true, encoding: .utf8)
      return
    }
    #expect(current == table, "docs/capture-requests.md is stale: run with CAPTURESHIELD_WRITE_DOCS=1")
  }
}
