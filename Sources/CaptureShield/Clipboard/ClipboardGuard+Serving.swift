// The copied-text guard's serving side: a paste request for a guarded selection waits
// until RECORD (`SelectionRecorder`, `ConversionLedger`) says who sent it, `ClipboardCore`
// decides, and the text is sent (INCR for large texts) or refused. The state lives in
// `ClipboardGuard` (ClipboardGuard.swift: `Serving`, `Senders`), which also takes the text over.

internal import CXCB
import Foundation

extension ClipboardGuard {
  // MARK: Serving

  func targetKind(_ t: xcb_atom_t) -> ClipboardCore.Target {
    if textTargets.contains(t) { return .text }
    if t == atoms.targets { return .targets }
    if t == atoms.hint { return .hint }
    if t == atoms.timestamp { return .timestamp }
    return .unsupported
  }

  func selectionRequested(_ e: xcb_selection_request_event_t) {
    guard let sel = atoms.names[e.selection], held.sealed[sel] != nil, e.owner == window else {
      notify(e, property: 0)
      return
    }
    // Answered once RECORD says who sent it, in the order requests came (`verifySenders`).
    senders.unverified.append(Unverified(event: e, marker: nil, deadline: Clock.now() + Self.senderTimeout))
  }

  // MARK: Who sent a request

  /// Feeds the ledger with what RECORD has brought.
  func readRecords() {
    guard let r = senders.recorder else { return }
    for rec in r.read(own: ConversionLedger.Own(base: x.ownBase, markerSelection: atoms.sync)) {
      senders.ledger.add(rec)
    }
    if r.hasError {
      log.error("copied-text guard: the RECORD context ended (its connection was killed?); starting it again")
      watch(r.fileDescriptor, false)
      senders.retiredBases.append(r.dataBase)
      senders.recorder = nil
      if Clock.now() >= senders.lastRecorderStart + Self.recorderRetry { startRecorder() }
    }
  }

  /// The bases of connections that are no longer the guard's (see `retiredBases`), taken.
  func takeRetiredBases() -> [UInt32] {
    defer { senders.retiredBases = [] }
    return senders.retiredBases
  }

  /// Answers the waiting requests, oldest first, as far as the ledger knows their senders.
  /// A request whose record has not come yet gets a sync marker behind it (which also
  /// makes the server flush what it recorded) and waits, without blocking the loop, until
  /// the record, the marker or `senderTimeout` comes.
  func verifySenders() {
    while let head = senders.unverified.first {
      let e = head.event
      let match: ConversionLedger.Match =
        senders.recorder == nil
        ? .unrecorded
        : senders.ledger.match(
          .init(requestor: e.requestor, selection: e.selection, target: e.target, property: e.property, time: e.time),
          marker: head.marker)
      switch match {
      case .sender(let base):
        senders.unverified.removeFirst()
        decide(e, sender: base, why: nil)
      case .unrecorded:
        senders.unverified.removeFirst()
        decide(e, sender: nil, why: senders.recorder == nil ? "RECORD unavailable" : "no ConvertSelection recorded")
      case .pending where Clock.now() >= head.deadline:
        senders.unverified.removeFirst()
        decide(e, sender: nil, why: "no record within \(Self.senderTimeout)")
      case .pending:
        if senders.unverified.contains(where: { $0.marker == nil }) {
          senders.markersSent &+= 1
          x.convertSelection(
            requestor: window, selection: atoms.sync, target: atoms.sync, property: 0, time: senders.markersSent)
          for i in senders.unverified.indices where senders.unverified[i].marker == nil {
            senders.unverified[i].marker = senders.markersSent
          }
        }
        return
      }
    }
  }

  /// Hands a request to the core: `sender` is the base of the client RECORD says sent it
  /// (nil: unknown, `why`).
  func decide(_ e: xcb_selection_request_event_t, sender: UInt32?, why: String?) {
    guard let sel = atoms.names[e.selection] else { return notify(e, property: 0) }
    let id = serving.nextRequestID
    serving.nextRequestID += 1
    serving.pending[id] = e
    let base = x.clientBase(of: e.requestor)
    let identity = ProcessInfoReader.identity(pid: x.clientPID(of: e.requestor))
    var focused = false
    if let r = xcb_get_input_focus_reply(x.conn, xcb_get_input_focus(x.conn), nil) {
      let f = r.pointee.focus
      focused = f > 1 && x.clientBase(of: f) == base
      free(r)
    }
    let from: ClipboardCore.Sender
    switch sender {
    case let s? where s == base: from = .recorded(ClientID(base), identity)
    case let s?: from = .recorded(ClientID(s), ProcessInfoReader.identity(pid: x.clientPID(of: s)))
    case nil: from = .unknown(why: why ?? "unknown")
    }
    apply(
      .request(
        id: id, selection: sel, reader: ClientID(base), identity: identity, focused: focused,
        target: targetKind(e.target), requestor: e.requestor, sender: from))
    serving.pending[id] = nil
  }

  func serve(_ e: xcb_selection_request_event_t) {
    let prop = e.property == 0 ? e.target : e.property
    guard let sel = atoms.names[e.selection] else { return notify(e, property: 0) }
    switch targetKind(e.target) {
    case .targets:
      x.changeProperty(
        e.requestor, prop, type: atoms.atom,
        words: [atoms.targets, atoms.timestamp, atoms.utf8, atoms.textPlain, atoms.string, atoms.text, atoms.hint])
    case .hint:
      x.changeProperty(e.requestor, prop, type: atoms.hint, format: 8, bytes: Array("secret".utf8))
    case .timestamp:
      x.changeProperty(e.requestor, prop, type: atoms.integer, words: [held.ownedSince[sel] ?? 0])
    case .text:
      guard let box = held.sealed[sel], var text = try? box.open() else { return notify(e, property: 0) }
      var type = atoms.utf8
      if e.target == atoms.string {
        type = atoms.string
        if let latin = utf8ToLatin1(text) {
          text.wipe()
          text = latin
        }
      } else if e.target == atoms.textPlain {
        type = atoms.textPlain
      }
      if text.count > incrThreshold {
        x.selectEvents(e.requestor, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue)
        x.changeProperty(e.requestor, prop, type: atoms.incr, words: [UInt32(text.count)])
        serving.transfers.append(
          Transfer(
            requestor: e.requestor, property: prop, type: type, data: text, offset: 0, finished: false,
            deadline: Clock.now() + Self.transferTimeout))
      } else {
        x.changeProperty(e.requestor, prop, type: type, from: text.pointer, count: text.count)
        text.wipe()
      }
    case .unsupported:
      return notify(e, property: 0)
    }
    notify(e, property: prop)
  }

  /// The reader deleted an INCR property: send the next chunk (the last one is empty).
  func transferProgressed(window w: xcb_window_t, atom: xcb_atom_t) {
    guard let i = serving.transfers.firstIndex(where: { $0.requestor == w && $0.property == atom }) else { return }
    if serving.transfers[i].finished {
      serving.transfers[i].data.wipe()
      serving.transfers.remove(at: i)
      if !serving.transfers.contains(where: { $0.requestor == w }) {
        x.selectEvents(w, 0)
      }
      return
    }
    let t = serving.transfers[i]
    let n = min(incrThreshold, t.data.count - t.offset)
    x.changeProperty(w, atom, type: t.type, from: t.data.pointer + t.offset, count: n)
    serving.transfers[i].offset += n
    serving.transfers[i].finished = n == 0
    serving.transfers[i].deadline = Clock.now() + Self.transferTimeout
  }

  func notify(_ e: xcb_selection_request_event_t, property: xcb_atom_t) {
    var ev = xcb_selection_notify_event_t()
    ev.response_type = UInt8(XCB_SELECTION_NOTIFY)
    ev.time = e.time
    ev.requestor = e.requestor
    ev.selection = e.selection
    ev.target = e.target
    ev.property = property
    x.sendEvent(to: e.requestor, XEventBytes.of(&ev))
  }
}
