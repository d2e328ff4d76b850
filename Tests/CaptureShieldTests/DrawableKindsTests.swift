// DrawableKinds: what the recorded requests tell about clients' own drawables, and what
// they must not (a failed CreatePixmap on a window's id, a client met after its start).

import CaptureShield
import Testing

struct DrawableKindsCase: Sendable, CustomStringConvertible {
  enum Step: Sendable {
    case started(UInt32)
    case died(UInt32)
    case change(DrawableChange)
    case learned(UInt32, DrawableFact)
  }
  let name: String
  let steps: [Step]
  let id: UInt32
  let expected: DrawableFact?
  var description: String { name }

  static let mask: UInt32 = 0x001f_ffff
  static let client: UInt32 = 0x0040_0000
  static let other: UInt32 = 0x0060_0000
  static let p: UInt32 = client | 7
  /// A window whose area is not known.
  static let window = DrawableFact.window(ScreenRect?.none)

  static let all: [DrawableKindsCase] = [
    DrawableKindsCase(
      name: "a pixmap created by a client seen from its start is a pixmap (no lookup)",
      steps: [.started(client), .change(.createdPixmap(p))], id: p, expected: .pixmap),
    DrawableKindsCase(
      name: "a client met after its start: its CreatePixmap does not count (a window of its own may bear the id)",
      steps: [.change(.createdPixmap(p))], id: p, expected: nil),
    DrawableKindsCase(
      name: "a CreatePixmap naming an own window's id (BadIDChoice) leaves it a window",
      steps: [.started(client), .change(.createdWindow(p)), .change(.createdPixmap(p))], id: p,
      expected: .window(nil)),
    DrawableKindsCase(
      name: "a freed pixmap is forgotten",
      steps: [.started(client), .change(.createdPixmap(p)), .change(.freedPixmap(p))], id: p, expected: nil),
    DrawableKindsCase(
      name: "a FreePixmap naming a window (BadPixmap) leaves it a window",
      steps: [.started(client), .change(.createdWindow(p)), .change(.freedPixmap(p))], id: p,
      expected: .window(nil)),
    DrawableKindsCase(
      name: "a freed pixmap's id made a window is a window",
      steps: [.started(client), .change(.createdPixmap(p)), .change(.freedPixmap(p)), .change(.createdWindow(p))],
      id: p, expected: .window(nil)),
    DrawableKindsCase(
      name: "CreateWindow over a pixmap fact (the pixmap freed unseen) makes it a window",
      steps: [.started(client), .change(.createdPixmap(p)), .change(.createdWindow(p))], id: p,
      expected: .window(nil)),
    DrawableKindsCase(
      name: "a destroyed window is forgotten; its id then made a pixmap is a pixmap",
      steps: [.started(client), .change(.createdWindow(p)), .change(.destroyedWindow(p)), .change(.createdPixmap(p))],
      id: p, expected: .pixmap),
    DrawableKindsCase(
      name: "a DestroyWindow naming a pixmap (BadWindow) leaves it a pixmap",
      steps: [.started(client), .change(.createdPixmap(p)), .change(.destroyedWindow(p))], id: p, expected: .pixmap),
    DrawableKindsCase(
      name: "a lookup answering gone forgets a pixmap",
      steps: [.started(client), .change(.createdPixmap(p)), .learned(p, .gone)], id: p, expected: nil),
    DrawableKindsCase(
      name: "a lookup answering gone keeps a window mark (a later failed CreatePixmap must not win)",
      steps: [.started(client), .change(.createdWindow(p)), .learned(p, .gone), .change(.createdPixmap(p))], id: p,
      expected: .window(nil)),
    DrawableKindsCase(
      name: "the client's death forgets its facts and its start (the base goes to the next client)",
      steps: [.started(client), .change(.createdWindow(p)), .died(client), .change(.createdPixmap(p))], id: p,
      expected: nil),
    DrawableKindsCase(
      name: "another client's death forgets nothing of this one's",
      steps: [.started(client), .change(.createdPixmap(p)), .died(other)], id: p, expected: .pixmap),
    DrawableKindsCase(
      name: "a lookup's window answer is kept without its area",
      steps: [.learned(p, .window(ScreenRect(x: 1, y: 2, width: 3, height: 4)))], id: p, expected: .window(nil)),
  ]
}

@Suite("DrawableKinds: own drawables from the records")
struct DrawableKindsTests {
  @Test("steps and the fact they leave", arguments: DrawableKindsCase.all)
  func steps(_ c: DrawableKindsCase) {
    var kinds = DrawableKinds(resourceMask: DrawableKindsCase.mask)
    for step in c.steps {
      switch step {
      case .started(let base): kinds.clientStarted(base)
      case .died(let base): kinds.clientDied(base)
      case .change(let change): kinds.apply(change)
      case .learned(let id, let fact): kinds.learned(id, fact)
      }
    }
    #expect(kinds[c.id] == c.expected)
  }

  @Test(
    "reconcile: a window then, a pixmap now, was hidden after the read (gone); other answers stand",
    arguments: [
      (Optional(DrawableKindsCase.window), DrawableFact.pixmap, DrawableFact.gone),
      (DrawableKindsCase.window, .gone, .gone),
      (DrawableKindsCase.window, DrawableKindsCase.window, DrawableKindsCase.window),
      (.pixmap, .pixmap, .pixmap),
      (nil, .pixmap, .pixmap),
      (.pixmap, DrawableKindsCase.window, DrawableKindsCase.window),
    ] as [(DrawableFact?, DrawableFact, DrawableFact)])
  func reconcile(known: DrawableFact?, answer: DrawableFact, expected: DrawableFact) {
    #expect(DrawableKinds.reconcile(known: known, answer: answer) == expected)
  }

  @Test("past its own limit a client loses its facts and its creations stop counting; others keep theirs")
  func perClientBound() {
    let big = DrawableKindsCase.client
    let small = DrawableKindsCase.other
    var kinds = DrawableKinds(resourceMask: DrawableKindsCase.mask, limit: 100, perClientLimit: 4)
    kinds.clientStarted(big)
    kinds.clientStarted(small)
    kinds.apply(.createdWindow(small | 1))
    // windows destroyed one by one hold nothing
    for i in UInt32(1)...50 {
      kinds.apply(.createdWindow(big | i))
      kinds.apply(.destroyedWindow(big | i))
    }
    #expect(kinds.count == 1)
    #expect(kinds.knowsEveryRequest(ofClient: big))
    for i in UInt32(1)...5 { kinds.apply(.createdWindow(big | i)) }
    #expect(kinds[big | 1] == nil)
    #expect(!kinds.knowsEveryRequest(ofClient: big))
    kinds.apply(.createdPixmap(big | 1))
    #expect(kinds[big | 1] == nil)
    #expect(kinds[small | 1] == DrawableKindsCase.window)
    #expect(kinds.knowsEveryRequest(ofClient: small))
  }

  @Test("past the limit the client with the most facts loses them, and its creations stop counting")
  func bound() {
    let mask = DrawableKindsCase.mask
    let big = DrawableKindsCase.client
    let small = DrawableKindsCase.other
    var kinds = DrawableKinds(resourceMask: mask, limit: 8, perClientLimit: 100)
    kinds.clientStarted(big)
    kinds.clientStarted(small)
    kinds.apply(.createdWindow(small | 1))
    kinds.apply(.createdWindow(big | 1))
    for i in UInt32(2)...8 { kinds.apply(.createdPixmap(big | i)) }
    #expect(kinds.count == 1)
    #expect(kinds[small | 1] == .window(nil))
    #expect(kinds[big | 1] == nil)
    #expect(!kinds.knowsEveryRequest(ofClient: big))
    #expect(kinds.knowsEveryRequest(ofClient: small))
    // The window it made is forgotten: a failed CreatePixmap on its id must not count now.
    kinds.apply(.createdPixmap(big | 1))
    #expect(kinds[big | 1] == nil)
    kinds.apply(.createdPixmap(small | 2))
    #expect(kinds[small | 2] == .pixmap)
  }
}
