// The RECORD thread (`RecordPump`) in the test process, on a real Xvfb: the loop's side and
// the pump thread run together here, so `make test` runs this suite under ThreadSanitizer
// too (scripts/sanitize.sh), which the daemon's own process never is.

import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield

@Suite("RECORD thread", .serialized, .timeLimit(.minutes(3)))
struct RecordThreadTests {
  @Test("the RECORD thread maps armed shields when a client connects, and the loop takes what fired")
  func pumpFiresOnNewClients() async throws {
    let server = try await XvfbServer.start()
    do {
      let app = try CaptureShield.XConnection(display: server.display)
      let target = app.generateID()
      #expect(
        app.createWindow(
          target, parent: app.root, x: 10, y: 10, width: 100, height: 100, inputOnly: false, mask: 0, values: [],
          checked: true))
      app.mapWindow(target)
      app.flush()
      let shieldConnection = try CaptureShield.XConnection(display: server.display)
      let driver = ShieldDriver(connection: shieldConnection, failMode: .open, input: .passthrough, label: "")
      let detector = try CaptureDetector(display: server.display)
      detector.excludedClients.formUnion([ClientID(app.ownBase), ClientID(shieldConnection.ownBase)])
      detector.startPump()
      let pump = try #require(detector.pump)
      var firedRounds = 0
      for _ in 0..<20 {
        // The loop's side: a prepared shield, taken down, armed for the next client.
        driver.prepare(target)
        driver.unshield(target)
        let arm = driver.armable([target])
        #expect(arm.targets == [target])
        var committed = false
        for _ in 0..<500 where !committed {
          committed = pump.commit(
            removesShields: driver.hasPendingUnmaps, arm: (shieldConnection.conn, arm.shields, arm.targets),
            submit: { driver.commitUnmaps() })
          if !committed { _ = detector.drain(isSecure: { _ in false }) }
        }
        #expect(committed)
        shieldConnection.flush()
        // A new client: the pump thread maps the armed shield when it reads ClientStarted.
        let client = try CaptureShield.XConnection(display: server.display)
        _ = client.queryTree(client.root)
        var fired: Set<WindowID> = []
        let deadline = Date().addingTimeInterval(5)
        while fired.isEmpty && Date() < deadline {
          _ = detector.drain(isSecure: { _ in false })
          fired.formUnion(detector.lastFired)
          if fired.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(fired == [target])
        if fired == [target] { firedRounds += 1 }
        driver.markMapped(target)
        let shield = try #require(driver.shields[target])
        // Mapped on the server by the pump thread (our own unmap was sent before it).
        _ = shieldConnection.queryTree(shieldConnection.root)
        #expect(app.attributes(shield)?.mapState != 0)
      }
      print("RECORD thread: fired on \(firedRounds) of 20 new clients")
      detector.stopPump()
    }
    await server.stop()
  }
}
