// Client-side mode of secure input (docs/security.md, "Input"): without the Xorg module, X
// gives no way to keep a client from reading the keyboard, so the daemon notices the
// requests by which a client listens to keys typed into other clients' windows (RECORD,
// `Record/KeyloggerRecorder`), audits each client once per kind (`keylogger-suspected`), and
// tells the user when a secure window gets the keyboard focus while such a client is
// connected. Pure: the decoding of recorded requests (`KeylogDecoder`, here) and the state
// machine (`KeyloggerWatch.swift`); no I/O, no clock (the RECORD replies' server time is the
// clock of the keymap-polling rate).

/// How a client listens to the keyboard.
public enum KeyListenKind: String, Sendable, Hashable, CaseIterable, Comparable {
  /// XI2 XISelectEvents of RawKeyPress/RawKeyRelease (only the root can have them): every
  /// key, whichever window has the focus (`xinput test-xi2 --root`).
  case xi2RawKeys = "xi2-raw-keys"
  /// XI2 XISelectEvents of KeyPress/KeyRelease on the root or another client's window.
  case xi2DeviceKeys = "xi2-device-keys"
  /// XI 1.x SelectExtensionEvent of DeviceKeyPress/DeviceKeyRelease on the root or another
  /// client's window.
  case xi1DeviceKeys = "xi1-device-keys"
  /// GrabKeyboard on the root or another client's window: every key goes to the grabber.
  case keyboardGrab = "keyboard-grab"
  /// GrabKey of AnyKey on the root or another client's window.
  case anyKeyGrab = "anykey-grab"
  /// KeyPress or KeyRelease in the event mask of the root or another client's window
  /// (ChangeWindowAttributes, as `xev -id` does).
  case keyPressSelected = "keypress-selected"
  /// A RECORD context whose ranges include key events (device or delivered KeyPress,
  /// KeyRelease, XI DeviceKeyPress/Release): CreateContext or RegisterClients.
  case recordKeyEvents = "record-key-events"
  /// XKB SelectEvents of events that carry the key code of a key press (ActionMessage,
  /// AccessXNotify).
  case xkbKeyEvents = "xkb-key-events"
  /// QueryKeymap `KeyloggerWatch.keymapPollCount` (5) times within `keymapPollWindowMs`
  /// (1 s): the keys down, polled.
  case keymapPolling = "keymap-polling"

  public static func < (a: Self, b: Self) -> Bool {
    allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
  }

  /// What it does, in words for a notice ("selected raw key events").
  public var phrase: String {
    switch self {
    case .xi2RawKeys: return "selected raw key events of every keyboard"
    case .xi2DeviceKeys: return "selected the key events of another program's window"
    case .xi1DeviceKeys: return "selected the key events of another program's window"
    case .keyboardGrab: return "grabbed the keyboard"
    case .anyKeyGrab: return "grabbed every key"
    case .keyPressSelected: return "selected the key presses of another program's window"
    case .recordKeyEvents: return "records key events"
    case .xkbKeyEvents: return "selected keyboard events that carry key codes"
    case .keymapPolling: return "polls the keyboard state"
    }
  }
}

/// One request by which a client listens to the keyboard.
public struct KeyListenSignal: Sendable, Hashable {
  public var kind: KeyListenKind
  /// The request, e.g. `XInputExtension XISelectEvents`.
  public var request: String
  /// The window it names (the root, another client's), when it names one.
  public var window: UInt32?
  /// What exactly, e.g. `RawKeyPress, RawKeyRelease (device 0)`.
  public var detail: String

  public init(kind: KeyListenKind, request: String, window: UInt32?, detail: String) {
    self.kind = kind
    self.request = request
    self.window = window
    self.detail = detail
  }
}

/// What one recorded request means for the keyboard watch.
public enum KeylogRecord: Sendable, Hashable {
  /// The client listens to keys typed elsewhere.
  case listens(KeyListenSignal)
  /// QueryKeymap: counts toward `keymapPolling` when frequent.
  case keymapQuery
  /// SetInputFocus: the focus may have moved (the shell asks where it is now).
  case focusSet(window: UInt32)
}

/// The opcodes the keyboard watch records: core constants, and the extensions' major
/// opcodes (and XInput's first event) as the server assigned them.
public struct KeylogOpcodes: Sendable, Hashable {
  public static let changeWindowAttributes: UInt8 = 2
  public static let grabKeyboard: UInt8 = 31
  public static let grabKey: UInt8 = 33
  public static let setInputFocus: UInt8 = 42
  public static let queryKeymap: UInt8 = 44
  /// The core requests recorded.
  public static let core: [UInt8] = [changeWindowAttributes, grabKeyboard, grabKey, setInputFocus, queryKeymap]
  /// XInputExtension SelectExtensionEvent (XI 1.x) and XISelectEvents (XI2).
  public static let xiSelectExtensionEvent: UInt8 = 6
  public static let xiSelectEvents: UInt8 = 46
  /// XI2 XIGrabDevice and XIPassiveGrabDevice.
  public static let xiGrabDevice: UInt8 = 51
  public static let xiPassiveGrabDevice: UInt8 = 54
  /// XKEYBOARD SelectEvents.
  public static let xkbSelectEvents: UInt8 = 1
  /// RECORD CreateContext and RegisterClients.
  public static let recordCreateContext: UInt8 = 1
  public static let recordRegisterClients: UInt8 = 2

  /// The extensions whose major opcodes are needed (QueryExtension names).
  public static let extensionNames = ["XInputExtension", "XKEYBOARD", "RECORD"]

  public var xinput: UInt8?
  /// XInputExtension's first event (XI 1.x event classes are `device << 8 | type`).
  public var xinputFirstEvent: UInt8?
  public var xkb: UInt8?
  public var record: UInt8?

  public init(xinput: UInt8? = nil, xinputFirstEvent: UInt8? = nil, xkb: UInt8? = nil, record: UInt8? = nil) {
    self.xinput = xinput
    self.xinputFirstEvent = xinputFirstEvent
    self.xkb = xkb
    self.record = record
  }

  /// The extension requests recorded: (major, first minor, last minor), one range each.
  public var extensionRanges: [(major: UInt8, minors: ClosedRange<UInt8>)] {
    var out: [(major: UInt8, minors: ClosedRange<UInt8>)] = []
    if let xinput {
      out.append((xinput, Self.xiSelectExtensionEvent...Self.xiSelectExtensionEvent))
      out.append((xinput, Self.xiSelectEvents...Self.xiSelectEvents))
      out.append((xinput, Self.xiGrabDevice...Self.xiGrabDevice))
      out.append((xinput, Self.xiPassiveGrabDevice...Self.xiPassiveGrabDevice))
    }
    if let xkb { out.append((xkb, Self.xkbSelectEvents...Self.xkbSelectEvents)) }
    if let record { out.append((record, Self.recordCreateContext...Self.recordRegisterClients)) }
    return out
  }
}

extension RequestReader {
  func u16(_ offset: Int) -> UInt16? {
    let p = position(offset)
    guard p >= 0, p <= bytes.count - 2 else { return nil }
    return Self.load16(bytes, p, bigEndian)
  }
}

/// Decodes recorded requests into `KeylogRecord`s. Every read is bounds-checked: a
/// malformed request decodes to nothing.
public enum KeylogDecoder {
  // Core event codes and masks.
  static let keyPress: UInt8 = 2
  static let keyRelease: UInt8 = 3
  static let keyPressMask: UInt32 = 1
  static let keyReleaseMask: UInt32 = 2
  /// CWEventMask in a window's value list.
  static let eventMaskBit = 11
  // XI2 event types.
  static let xi2Keys: [(Int, String)] = [(2, "KeyPress"), (3, "KeyRelease")]
  static let xi2RawKeys: [(Int, String)] = [(13, "RawKeyPress"), (14, "RawKeyRelease")]
  // XKB events (bit numbers) that carry the key code of a press, and the size of each
  // event's detail fields in SelectEvents (NewKeyboardNotify ... ExtensionDeviceNotify).
  static let xkbKeyEvents: [(Int, String)] = [(9, "ActionMessage"), (10, "AccessXNotify")]
  static let xkbDetailSizes: [Int: Int] = [
    0: 2, 2: 2, 3: 4, 4: 4, 5: 4, 6: 2, 7: 1, 8: 1, 9: 1, 10: 2, 11: 2,
  ]

  /// Whether `window` is not the client's own: the root, another client's window.
  /// 0 (None) names no window.
  static func foreign(_ window: UInt32, clientBase: UInt32, resourceMask: UInt32) -> Bool {
    window != 0 && window & ~resourceMask != clientBase
  }

  /// "the root" or "window 0x...".
  static func name(_ window: UInt32, root: UInt32?) -> String {
    window == root ? "the root" : "window 0x" + String(window, radix: 16)
  }

  /// What `request` (one complete recorded request of the client `clientBase`) means for
  /// the keyboard watch; empty when nothing. `root` only names the root in details.
  public static func decode(
    _ request: UnsafeRawBufferPointer, clientBase: UInt32, resourceMask: UInt32, bigEndian: Bool,
    opcodes: KeylogOpcodes, root: UInt32? = nil
  ) -> [KeylogRecord] {
    guard let r = RequestReader(request, bigEndian: bigEndian) else { return [] }
    func isForeign(_ w: UInt32) -> Bool { foreign(w, clientBase: clientBase, resourceMask: resourceMask) }
    switch r.major {
    case KeylogOpcodes.queryKeymap:
      return [.keymapQuery]
    case KeylogOpcodes.setInputFocus:
      guard let w = r.u32(4) else { return [] }
      return [.focusSet(window: w)]
    case KeylogOpcodes.changeWindowAttributes:
      guard let w = r.u32(4), isForeign(w),
        let mask = r.valueListItem(maskOffset: 8, bit: eventMaskBit),
        mask & (keyPressMask | keyReleaseMask) != 0
      else { return [] }
      let names = [(keyPressMask, "KeyPress"), (keyReleaseMask, "KeyRelease")].filter { mask & $0.0 != 0 }
        .map(\.1)
      return [
        .listens(
          KeyListenSignal(
            kind: .keyPressSelected, request: "ChangeWindowAttributes", window: w,
            detail: names.joined(separator: ", ") + " in the event mask of " + name(w, root: root)))
      ]
    case KeylogOpcodes.grabKeyboard:
      guard let w = r.u32(4), isForeign(w) else { return [] }
      return [
        .listens(
          KeyListenSignal(
            kind: .keyboardGrab, request: "GrabKeyboard", window: w,
            detail: "the keyboard grabbed on " + name(w, root: root)
          ))
      ]
    case KeylogOpcodes.grabKey:
      guard let w = r.u32(4), isForeign(w), let key = r.u8(10), key == 0, let mods = r.u16(8) else { return [] }
      let modifiers = mods == 0x8000 ? "AnyModifier" : "modifiers 0x" + String(mods, radix: 16)
      return [
        .listens(
          KeyListenSignal(
            kind: .anyKeyGrab, request: "GrabKey", window: w,
            detail: "AnyKey with \(modifiers) grabbed on " + name(w, root: root)))
      ]
    default:
      break
    }
    if let xi = opcodes.xinput, r.major == xi {
      switch r.minorOrData {
      case KeylogOpcodes.xiSelectEvents: return xiSelectEvents(r, isForeign: isForeign, root: root)
      case KeylogOpcodes.xiGrabDevice, KeylogOpcodes.xiPassiveGrabDevice:
        return xiGrab(r, isForeign: isForeign, root: root)
      case KeylogOpcodes.xiSelectExtensionEvent:
        return xiSelectExtensionEvent(r, firstEvent: opcodes.xinputFirstEvent, isForeign: isForeign, root: root)
      default: return []
      }
    }
    if let xkb = opcodes.xkb, r.major == xkb, r.minorOrData == KeylogOpcodes.xkbSelectEvents {
      return xkbSelectEvents(r)
    }
    if let rec = opcodes.record, r.major == rec,
      r.minorOrData == KeylogOpcodes.recordCreateContext || r.minorOrData == KeylogOpcodes.recordRegisterClients
    {
      return recordRanges(r, firstEvent: opcodes.xinputFirstEvent)
    }
    return []
  }

  /// XISelectEvents: window at 4, num_masks at 8 (2 bytes), then masks: deviceid (2),
  /// mask_len (2, in 4-byte units), the mask bytes (bit n in byte n/8).
  static func xiSelectEvents(_ r: RequestReader, isForeign: (UInt32) -> Bool, root: UInt32?) -> [KeylogRecord] {
    guard let w = r.u32(4), isForeign(w), let count = r.u16(8) else { return [] }
    var p = 12
    var raw: [String] = []
    var keys: [String] = []
    var devices: [UInt16] = []
    for _ in 0..<count {
      guard let device = r.u16(p), let words = r.u16(p + 2) else { break }
      let len = Int(words) * 4
      func bit(_ n: Int) -> Bool { n / 8 < len && (r.u8(p + 4 + n / 8) ?? 0) & (1 << UInt8(n % 8)) != 0 }
      let rawHere = xi2RawKeys.filter { bit($0.0) }.map(\.1)
      let keysHere = xi2Keys.filter { bit($0.0) }.map(\.1)
      if !rawHere.isEmpty || !keysHere.isEmpty { devices.append(device) }
      for n in rawHere where !raw.contains(n) { raw.append(n) }
      for n in keysHere where !keys.contains(n) { keys.append(n) }
      p += 4 + len
    }
    let on = " on " + name(w, root: root) + " (device " + devices.map(String.init).joined(separator: ", ") + ")"
    var out: [KeylogRecord] = []
    if !raw.isEmpty {
      out.append(
        .listens(
          KeyListenSignal(
            kind: .xi2RawKeys, request: "XInputExtension XISelectEvents", window: w,
            detail: raw.joined(separator: ", ") + on)))
    }
    if !keys.isEmpty {
      out.append(
        .listens(
          KeyListenSignal(
            kind: .xi2DeviceKeys, request: "XInputExtension XISelectEvents", window: w,
            detail: keys.joined(separator: ", ") + on)))
    }
    return out
  }

  /// XIGrabDevice: grab_window at 4, deviceid at 16, mask_len at 22 (4-byte units), the mask
  /// from 24: a grab whose mask has KeyPress or KeyRelease is a keyboard grab.
  /// XIPassiveGrabDevice: grab_window at 8, detail at 16, deviceid at 20, mask_len at 24,
  /// grab_type at 26 (1: keycode), the mask from 32: a keycode grab of detail 0
  /// (XIAnyKeycode) is an AnyKey grab.
  static func xiGrab(_ r: RequestReader, isForeign: (UInt32) -> Bool, root: UInt32?) -> [KeylogRecord] {
    if r.minorOrData == KeylogOpcodes.xiGrabDevice {
      guard let w = r.u32(4), isForeign(w), let device = r.u16(16), let words = r.u16(22) else { return [] }
      let len = Int(words) * 4
      let keys = xi2Keys.filter { $0.0 / 8 < len && (r.u8(24 + $0.0 / 8) ?? 0) & (1 << UInt8($0.0 % 8)) != 0 }
      guard !keys.isEmpty else { return [] }
      return [
        .listens(
          KeyListenSignal(
            kind: .keyboardGrab, request: "XInputExtension XIGrabDevice", window: w,
            detail: "device \(device) grabbed on " + name(w, root: root) + " for "
              + keys.map(\.1).joined(separator: ", ")))
      ]
    }
    guard let w = r.u32(8), isForeign(w), let detail = r.u32(16), detail == 0, let device = r.u16(20),
      let type = r.u8(26), type == 1
    else { return [] }
    return [
      .listens(
        KeyListenSignal(
          kind: .anyKeyGrab, request: "XInputExtension XIPassiveGrabDevice", window: w,
          detail: "XIAnyKeycode of device \(device) grabbed on " + name(w, root: root)))
    ]
  }

  /// SelectExtensionEvent: window at 4, count at 8 (2 bytes), the classes (4 bytes each:
  /// `device << 8 | event type`) from 12. DeviceKeyPress is the first event + 1,
  /// DeviceKeyRelease + 2.
  static func xiSelectExtensionEvent(
    _ r: RequestReader, firstEvent: UInt8?, isForeign: (UInt32) -> Bool, root: UInt32?
  ) -> [KeylogRecord] {
    guard let first = firstEvent, let w = r.u32(4), isForeign(w), let count = r.u16(8) else { return [] }
    var names: [String] = []
    for i in 0..<Int(count) {
      guard let c = r.u32(12 + 4 * i) else { break }
      let type = UInt8(c & 0xff)
      let device = c >> 8
      if type == first &+ 1 { names.append("DeviceKeyPress (device \(device))") }
      if type == first &+ 2 { names.append("DeviceKeyRelease (device \(device))") }
    }
    guard !names.isEmpty else { return [] }
    return [
      .listens(
        KeyListenSignal(
          kind: .xi1DeviceKeys, request: "XInputExtension SelectExtensionEvent", window: w,
          detail: names.joined(separator: ", ") + " on " + name(w, root: root)))
    ]
  }

  /// XKB SelectEvents: affectWhich at 6, clear at 8, selectAll at 10 (2 bytes each), then
  /// (after affectMap and map) from 16 one (affect, details) pair per event in
  /// `affectWhich & ~clear & ~selectAll` (but MapNotify, whose details are affectMap/map),
  /// in event order, packed.
  static func xkbSelectEvents(_ r: RequestReader) -> [KeylogRecord] {
    guard let which = r.u16(6), let clear = r.u16(8), let all = r.u16(10) else { return [] }
    let selectedAll = which & all & ~clear
    let detailed = which & ~clear & ~all
    var found: [String] = []
    var p = 16
    for bit in 0..<16 where detailed & (1 << UInt16(bit)) != 0 && bit != 1 {
      guard let size = xkbDetailSizes[bit] else { break }
      var affect: UInt32 = 0
      var details: UInt32 = 0
      for i in 0..<size {
        affect |= UInt32(r.u8(p + i) ?? 0) << UInt32(8 * (r.bigEndian ? size - 1 - i : i))
        details |= UInt32(r.u8(p + size + i) ?? 0) << UInt32(8 * (r.bigEndian ? size - 1 - i : i))
      }
      p += 2 * size
      if let n = xkbKeyEvents.first(where: { $0.0 == bit }), affect & details != 0 { found.append(n.1) }
    }
    for (bit, n) in xkbKeyEvents where selectedAll & (1 << UInt16(bit)) != 0 && !found.contains(n) {
      found.append(n)
    }
    guard !found.isEmpty else { return [] }
    return [
      .listens(
        KeyListenSignal(
          kind: .xkbKeyEvents, request: "XKEYBOARD SelectEvents", window: nil,
          detail: found.sorted().joined(separator: ", ")))
    ]
  }

  /// RECORD CreateContext and RegisterClients: num-client-specs at 12, num-ranges at 16
  /// (4 bytes each), the client specs (4 bytes each) from 20, then the ranges (24 bytes
  /// each): delivered-events (first, last) at 16 and device-events at 18 of each range.
  static func recordRanges(_ r: RequestReader, firstEvent: UInt8?) -> [KeylogRecord] {
    guard let specs = r.u32(12), let ranges = r.u32(16), specs < 1 << 20, ranges < 1 << 20 else { return [] }
    var keyCodes: [(UInt8, String)] = [(keyPress, "KeyPress"), (keyRelease, "KeyRelease")]
    if let f = firstEvent { keyCodes += [(f &+ 1, "DeviceKeyPress"), (f &+ 2, "DeviceKeyRelease")] }
    var found: [String] = []
    let start = 20 + 4 * Int(specs)
    for i in 0..<Int(ranges) {
      let at = start + 24 * i
      for (offset, what) in [(18, "device events"), (16, "delivered events")] {
        guard let first = r.u8(at + offset), let last = r.u8(at + offset + 1) else { return [] }
        guard first <= last, last != 0 else { continue }
        let keys = keyCodes.filter { first <= $0.0 && $0.0 <= last }.map(\.1)
        if !keys.isEmpty {
          let s = what + " " + keys.joined(separator: ", ")
          if !found.contains(s) { found.append(s) }
        }
      }
    }
    guard !found.isEmpty else { return [] }
    let request = r.minorOrData == KeylogOpcodes.recordCreateContext ? "RECORD CreateContext" : "RECORD RegisterClients"
    return [
      .listens(
        KeyListenSignal(
          kind: .recordKeyEvents, request: request, window: nil, detail: found.joined(separator: "; ")))
    ]
  }
}
