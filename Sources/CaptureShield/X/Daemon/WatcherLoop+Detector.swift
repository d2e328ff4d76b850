// The bridge from capture detection (RECORD, X-Resource, the compositor selection) to the engine.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

extension WatcherLoop {
  // MARK: Capture detection

  /// Looks up a client's identity (X-Resource PID of `sample`, any XID of the client, or
  /// of its resource base; then /proc) and remembers it. The one identity lookup.
  func identify(base: UInt32, sample: UInt32? = nil) -> ClientIdentity {
    let id = ProcessInfoReader.identity(pid: x.clientPID(of: sample ?? base))
    identities[base] = id
    return id
  }

  func wantsPokes(_ now: MonotonicTime) -> Bool {
    guard detector != nil else { return false }
    return !engine.sessions.isEmpty || now < promptRecordsUntil
  }

  func drainDetector() {
    guard let d = detector else { return }
    let now = Clock.now()
    if wantsPokes(now), now >= lastPoke + tuning.pokeInterval {
      d.poke()
      lastPoke = now
    }
    let readBefore = d.repliesRead
    defer {
      if d.repliesRead != readBefore {
        let now = Clock.now()
        recordRun = (now < lastRecords + tuning.batchInterval ? recordRun : 0) + (d.repliesRead - readBefore)
        lastRecords = now
      }
    }
    repeat {
      // A window not tracked yet might be secure: a manual redirection of it counts, and of
      // a shield. (No capture list: capturing `engine` would copy the whole engine on every
      // drain.)
      let events = d.drain(isSecure: { w in
        self.engine.windows[w]?.reason.isSecure ?? (self.pendingSet.contains(w) || self.driver.isShield(w))
      })
      // Shields the pump put up on a ClientStarted among these records: up on the server.
      let fired = d.lastFired
      for t in fired { driver.markMapped(t) }
      // Processes that loaded libxcb: clients about to connect (the pump fired for them).
      for program in d.lastLaunches { apply(.clientLaunching(program: program)) }
      defer {
        // Put up for a client the engine then did not quarantine (say, it had gone again):
        // down again, as the engine wants.
        for t in fired.sorted() where !engine.shielded.contains(t) { driver.unshield(t) }
      }
      // Decide with every window known: read the window events that came before and track
      // the windows whose tracking was deferred (once per batch of records).
      var windowsKnown = false
      func knowWindows() {
        guard !windowsKnown else { return }
        windowsKnown = true
        drainEvents()
        trackPending()
      }
      for e in events {
        switch e {
        case .clientStarted(let c):
          promptRecordsUntil = Clock.now() + tuning.promptRecordsAfterConnect
          if engine.policy.quarantine != nil {
            // Quarantine: the pump has put the armed shields up already; shield whatever
            // else the engine wants (one MapWindow each, no round trip, flushed by apply),
            // then identify (a round trip), then the rest.
            apply(.clientConnected(c, nil))
            let id = identify(base: c.base)
            knowWindows()
            apply(.clientIdentified(c, id))
          } else {
            // Identify first: short-lived tools are gone by the time anyone asks later, and a
            // lookup behind another request can get stuck behind the tool's GrabServer.
            let id = identify(base: c.base)
            knowWindows()
            apply(.clientConnected(c, id))
          }
        case .clientDied(let c):
          knowWindows()
          identities[c.base] = nil
          apply(.clientGone(c))
        case .request(let c, let req):
          if identities[c.base] == nil, engine.clients[c] == nil {
            // Connected before we started, or its ClientStarted was missed: identify now.
            let id = identify(base: c.base)
            knowWindows()
            apply(.clientConnected(c, id))
          }
          knowWindows()
          // A request that can only read a pixmap (a tile, a stipple, ...; recorded when the
          // policy allows some client) is capture when the pixmap is an allowed client's: a
          // compositor's pixmap named from a window. Anyone else's pixmap holds only what
          // its owner read (itself a recorded capture) or drew.
          if CaptureCatalog.standard.readsOnlyPixmaps(kind: req.kind), let t = req.target,
            engine.clients[ClientID(t & ~x.resourceMask)]?.clientClass != .allowed
          {
            continue
          }
          apply(.captureRequest(c, req))
          if req.bypassesShield, let w = req.target,
            case .lost(let t, let how) = driver.redirected(w, how: "redirected (Composite, Manual) by \(described(c))")
          {
            // A redirected shield paints nothing: replaced by a new one (not redirected).
            // (`redirected` does nothing unless `w` is one of our shields.)
            apply(.shieldLost(t, how: how))
          }
        }
      }
    } while d.moreAvailable
  }

  /// A client as an audit record names it in prose: its id, and its pid and program when
  /// X-Resource told them.
  func described(_ c: ClientID) -> String {
    let i = engine.clients[c]?.identity
    let known = [i?.pid.map { "pid \($0)" }, i?.exe].compactMap { $0 }
    return "client \(c)" + (known.isEmpty ? " (identity unknown)" : " (" + known.joined(separator: ", ") + ")")
  }

  /// Clients connected before the daemon: identify each (X-Resource QueryClients).
  func enumerateClients() {
    let own = Set([x.ownBase, shieldX.ownBase]).union(detector?.excludedClients.map(\.base) ?? [])
    for base in x.allClientBases() where !own.contains(base) && base != 0 {
      let id = identify(base: base)
      apply(.clientConnected(ClientID(base), id))
    }
  }

  /// The compositor: owner of `_NET_WM_CM_Sn` (XFixes selection events tell us when it
  /// changes), or, without one, a client found redirecting windows (X-Resource types).
  func watchCompositor() {
    xfixesFirstEvent = x.firstEvent("XFIXES")
    if xfixesFirstEvent != 0 {
      if let r = xcb_xfixes_query_version_reply(x.conn, xcb_xfixes_query_version(x.conn, 5, 0), nil) { free(r) }
      effects.watchSelection(cmAtom, reportTo: managerWindow)
    }
    let owner = x.selectionOwner(cmAtom)
    if owner != 0 {
      apply(.compositorChanged(ClientID(x.clientBase(of: owner))))
      return
    }
    let own: Set<UInt32> = [x.ownBase, shieldX.ownBase]
    for base in x.allClientBases() where !own.contains(base) && base != 0 {
      let types = x.resourceTypeNames(ofClient: base)
      if types.contains("CompositeClientSubwindows") || types.contains("CompositeClientWindow") {
        log.info("client 0x\(String(base, radix: 16)) redirects windows without owning _NET_WM_CM_S\(x.screenNumber)")
        apply(.compositorChanged(ClientID(base), ownsSelection: false))
        return
      }
    }
  }
}
