// Desktop notices of capture (`CaptureNotifier`): when a notice is due, what it says, and
// the rate limit, driven by the engine as the daemon drives it.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

private let app = ClientID(0x40_0000)
private let secret: WindowID = 0x40_0001
private let secret2: WindowID = 0x40_0002

private func identity(_ exe: String, pid: Int) -> ClientIdentity {
  ClientIdentity(pid: pid, exe: exe, comm: String(exe.split(separator: "/").last ?? ""), uid: 1000)
}

/// A secure (tagged) window of the app, mapped or not.
private func secureWindow(_ id: WindowID = secret, mapped: Bool = true) -> Engine.Event {
  .windowAppeared(WindowInfo(id: id, client: app, tag: .secure, propertiesKnown: true, mapped: mapped))
}

/// A client `base` running `exe` connects and sends one GetImage.
private func capture(_ base: UInt32, _ exe: String, pid: Int) -> [Engine.Event] {
  [
    .clientConnected(ClientID(base), identity(exe, pid: pid)),
    .captureRequest(ClientID(base), CaptureRequest(kind: "GetImage", target: 0x100)),
  ]
}

/// One step of a scenario: at `at` seconds, these events.
struct NoticeStep: Sendable {
  var at: Double
  var events: [Engine.Event]
}

struct NoticeCase: Sendable, CustomTestStringConvertible {
  var name: String
  var policy: Policy = Policy()
  var serverEnforced = false
  var steps: [NoticeStep]
  /// Each notice as "program pid windows protection trigger +others", at the step's time.
  var expected: [String]
  var testDescription: String { name }
}

/// Runs the engine and the notifier as the daemon does (sync after every event).
private func run(_ c: NoticeCase) -> [String] {
  var engine = Engine(policy: c.policy)
  var notifier = CaptureNotifier()
  var out: [String] = []
  for step in c.steps {
    for e in step.events {
      _ = engine.handle(e, now: .seconds(step.at))
      for n in notifier.sync(engine: engine, serverEnforced: c.serverEnforced) {
        out.append(
          "t=\(Int(step.at)) \(n.program) \(n.pid.map(String.init) ?? "-") \(n.windows) \(n.protection.rawValue) "
            + "\(n.trigger) +\(n.others)")
      }
    }
  }
  return out
}

private var alwaysPolicy: Policy {
  var p = Policy()
  p.when = .always
  return p
}

private var quarantinePolicy: Policy {
  var p = Policy()
  p.quarantine = .seconds(1)
  return p
}

@Suite struct CaptureNotifierTests {
  static let cases: [NoticeCase] = [
    NoticeCase(
      name: "a capture while a secure window is shown: one notice naming the program and the count",
      steps: [
        NoticeStep(at: 0, events: [secureWindow()]),
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
      ],
      expected: ["t=1 xwd 100 1 hidden request +0"]),
    NoticeCase(
      name: "two secure windows: counted",
      steps: [
        NoticeStep(at: 0, events: [secureWindow(), secureWindow(secret2)]),
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
      ],
      expected: ["t=1 xwd 100 2 hidden request +0"]),
    NoticeCase(
      name: "no secure window: nothing hidden, no notice",
      steps: [NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100))],
      expected: []),
    NoticeCase(
      name: "a secure window that is not mapped: nothing to hide on screen, no notice",
      steps: [
        NoticeStep(at: 0, events: [secureWindow(mapped: false)]),
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
      ],
      expected: []),
    NoticeCase(
      name: "more requests of the same session: still one notice",
      steps: [
        NoticeStep(at: 0, events: [secureWindow()]),
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
        NoticeStep(
          at: 2,
          events: Array(repeating: .captureRequest(ClientID(0x80_0000), CaptureRequest(kind: "GetImage")), count: 20)),
      ],
      expected: ["t=1 xwd 100 1 hidden request +0"]),
    NoticeCase(
      name: "quarantine of new clients is no capture: no notice, even for dozens of clients",
      policy: quarantinePolicy,
      steps: [NoticeStep(at: 0, events: [secureWindow()])]
        + (1...30).map { i in
          NoticeStep(
            at: Double(i),
            events: [
              .clientConnected(ClientID(0x80_0000 + UInt32(i) << 21), identity("/usr/bin/xterm", pid: 100 + i)), .tick,
            ])
        },
      expected: []),
    NoticeCase(
      name: "a script running xwd every second: one notice a minute, not one a second",
      steps: [NoticeStep(at: 0, events: [secureWindow()])]
        + (1...70).map { i in
          let base = 0x80_0000 + UInt32(i % 8) << 21
          return NoticeStep(
            at: Double(i), events: capture(base, "/usr/bin/xwd", pid: 1000 + i) + [.clientGone(ClientID(base))])
        },
      expected: ["t=1 xwd 1001 1 hidden request +0", "t=61 xwd 1061 1 hidden request +0"]),
    NoticeCase(
      name: "another program within 5 s waits for the interval; the latest is named, the others counted",
      steps: [
        NoticeStep(at: 0, events: [secureWindow()]),
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
        NoticeStep(at: 2, events: capture(0xa0_0000, "/usr/bin/import", pid: 101)),
        NoticeStep(at: 3, events: capture(0xc0_0000, "/usr/bin/scrot", pid: 102)),
        NoticeStep(at: 5, events: [.tick]),
        NoticeStep(at: 6, events: [.tick]),
      ],
      expected: ["t=1 xwd 100 1 hidden request +0", "t=6 scrot 102 1 hidden request +1"]),
    NoticeCase(
      name: "a known recorder: a notice when it connects",
      steps: [
        NoticeStep(at: 0, events: [secureWindow()]),
        NoticeStep(at: 1, events: [.clientConnected(ClientID(0x80_0000), identity("/usr/bin/ffmpeg", pid: 7))]),
      ],
      expected: ["t=1 ffmpeg 7 1 hidden known +0"]),
    NoticeCase(
      name: "paused: nothing hidden, no notice",
      steps: [
        NoticeStep(at: 0, events: [secureWindow(), .pause(until: nil, by: "test")]),
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
      ],
      expected: []),
    NoticeCase(
      name: "shield.when always: the capture is still news",
      policy: alwaysPolicy,
      steps: [
        NoticeStep(at: 0, events: [secureWindow()]),
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
      ],
      expected: ["t=1 xwd 100 1 hidden request +0"]),
    NoticeCase(
      name: "server enforcement: a known recorder's windows are censored",
      policy: alwaysPolicy, serverEnforced: true,
      steps: [
        NoticeStep(at: 0, events: [secureWindow()]),
        NoticeStep(at: 1, events: [.clientConnected(ClientID(0x80_0000), identity("/usr/bin/ffmpeg", pid: 7))]),
      ],
      expected: ["t=1 ffmpeg 7 1 censored known +0"]),
    NoticeCase(
      name: "a capture that started while nothing was protected: no notice when a window becomes secure later",
      steps: [
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
        NoticeStep(at: 2, events: [secureWindow()]),
        NoticeStep(
          at: 3,
          events: [
            .windowAppeared(WindowInfo(id: secret2, client: app, propertiesKnown: true, mapped: true)),
            .windowChanged(WindowInfo(id: secret2, client: app, tag: .secure, propertiesKnown: true, mapped: true)),
          ]),
        NoticeStep(at: 4, events: [.captureRequest(ClientID(0x80_0000), CaptureRequest(kind: "GetImage")), .tick]),
      ],
      expected: []),
    NoticeCase(
      name: "... and its next capture, a new session, is news",
      steps: [
        NoticeStep(at: 1, events: capture(0x80_0000, "/usr/bin/xwd", pid: 100)),
        NoticeStep(at: 2, events: [secureWindow(), .clientGone(ClientID(0x80_0000))]),
        NoticeStep(at: 10, events: [.tick]),
        NoticeStep(at: 11, events: capture(0xa0_0000, "/usr/bin/xwd", pid: 101)),
      ],
      expected: ["t=11 xwd 101 1 hidden request +0"]),
    NoticeCase(
      name: "an unidentified capturer is named by its client",
      steps: [
        NoticeStep(at: 0, events: [secureWindow()]),
        NoticeStep(at: 1, events: [.captureRequest(ClientID(0x80_0000), CaptureRequest(kind: "GetImage"))]),
      ],
      expected: ["t=1 an unidentified client (0x800000) - 1 hidden request +0"]),
  ]

  @Test(arguments: CaptureNotifierTests.cases)
  func notices(_ c: NoticeCase) {
    #expect(run(c) == c.expected)
  }

  /// `sync` after every event, as the daemon calls it, walks the sessions only when one
  /// started: a notice once per new session, and for the other events neither a notice nor
  /// a walk (and a notice the rate limit held back still comes when due).
  @Test func syncWalksTheSessionsOnlyWhenOneStarted() {
    var engine = Engine(policy: Policy())
    var notifier = CaptureNotifier()
    var log: [String] = []
    var walks = 0
    func step(_ at: Double, _ events: [Engine.Event]) {
      for e in events {
        _ = engine.handle(e, now: .seconds(at))
        for n in notifier.sync(engine: engine, serverEnforced: false) { log.append("t=\(Int(at)) \(n.program)") }
        if notifier.walks != walks {
          log.append("t=\(Int(at)) walk")
          walks = notifier.walks
        }
      }
    }
    step(0, [secureWindow(), secureWindow(secret2), .tick])  // the first sync walks (no session)
    step(1, [.clientConnected(ClientID(0x80_0000), identity("/usr/bin/xwd", pid: 100))])
    step(1, [.captureRequest(ClientID(0x80_0000), CaptureRequest(kind: "GetImage", target: 0x100))])
    step(
      2,
      Array(repeating: .captureRequest(ClientID(0x80_0000), CaptureRequest(kind: "GetImage")), count: 20) + [
        .tick, .windowGone(secret2), .windowAppeared(WindowInfo(id: 0x40_0009, client: app, propertiesKnown: true)),
      ])
    step(3, capture(0xa0_0000, "/usr/bin/import", pid: 101))  // held back until 6
    step(4, [.clientGone(ClientID(0x80_0000)), .tick])
    step(6, [.tick])
    step(7, [.tick])
    step(11, [.clientConnected(ClientID(0xc0_0000), identity("/usr/bin/ffmpeg", pid: 102))])
    #expect(
      log == [
        "t=0 walk", "t=1 xwd", "t=1 walk", "t=3 walk", "t=6 import", "t=11 ffmpeg", "t=11 walk",
      ])
  }

  /// Reads the Xorg module censored: one notice per program per minute.
  @Test(arguments: [
    (reads: [0.0], expected: 1),
    (reads: [0.0, 0.1, 0.2, 1, 2, 30, 59], expected: 1),
    (reads: [0.0, 61], expected: 2),
  ])
  func censoredReads(reads: [Double], expected: Int) {
    var engine = Engine(policy: alwaysPolicy)
    _ = engine.handle(secureWindow(), now: .seconds(0))
    var notifier = CaptureNotifier()
    var shown: [CaptureNotifier.Notice] = []
    for t in reads {
      _ = engine.handle(.tick, now: .seconds(t))
      shown += notifier.censored(
        reader: ClientID(0x80_0000), identity: identity("/usr/bin/xwd", pid: 5), engine: engine, now: .seconds(t))
    }
    #expect(shown.count == expected)
    #expect(shown.allSatisfy { $0.protection == .censored && $0.trigger == "censored" && $0.windows == 1 })
  }

  @Test(arguments: [
    (
      CaptureNotifier.Notice(program: "xwd", pid: 42, windows: 1, protection: .hidden, trigger: "request"),
      "Screen capture: 1 secure window hidden",
      "xwd (pid 42) is capturing the screen. CaptureShield hides 1 secure window from it."
    ),
    (
      CaptureNotifier.Notice(program: "ffmpeg", pid: 7, windows: 3, protection: .censored, trigger: "known", others: 2),
      "Screen capture: 3 secure windows censored",
      "ffmpeg (pid 7) is a known screen recorder and is connected. CaptureShield censors 3 secure windows from it."
        + " 2 other captures since the last notice."
    ),
    (
      CaptureNotifier.Notice(
        program: "picom", pid: nil, windows: 2, protection: .hidden, trigger: "compositor", others: 1),
      "Screen capture: 2 secure windows hidden",
      "picom composites the screen and is not a trusted compositor. CaptureShield hides 2 secure windows from it."
        + " 1 other capture since the last notice."
    ),
    (
      CaptureNotifier.Notice(program: "xwd", pid: 9, windows: 1, protection: .censored, trigger: "censored"),
      "Screen capture: 1 secure window censored",
      "xwd (pid 9) tried to read the screen. CaptureShield censors 1 secure window from it."
    ),
  ])
  func text(notice: CaptureNotifier.Notice, summary: String, body: String) {
    #expect(notice.summary == summary)
    #expect(notice.body == body)
  }

  @Test(arguments: [
    (ClientIdentity(pid: 1, exe: "/usr/bin/xwd"), "xwd"),
    (ClientIdentity(pid: 1, exe: nil, comm: "grabber"), "grabber"),
    (ClientIdentity(pid: 1, exe: "/tmp/evil\n\u{202E}name"), "evil??name"),
    (ClientIdentity(pid: 1, exe: "/tmp/" + String(repeating: "x", count: 100)), String(repeating: "x", count: 64)),
    (ClientIdentity(failure: "TCP client"), "an unidentified client (0x800000)"),
  ])
  func programName(identity: ClientIdentity, shown: String) {
    #expect(CaptureNotifier.programName(identity, client: ClientID(0x80_0000)) == shown)
  }

  @Test(arguments: [
    ("xwd", "xwd"),
    ("<b>x</b> & y", "&lt;b&gt;x&lt;/b&gt; &amp; y"),
  ])
  func markupEscaping(text: String, escaped: String) {
    #expect(CaptureNotifier.escapeMarkup(text) == escaped)
  }

  /// The session bus: the variable, else the systemd user bus socket, else none (never
  /// X11 autolaunch).
  @Test(
    arguments: [
      (["DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/b"], true, "unix:path=/tmp/b"),
      (["DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": "/run/user/1"], true, "unix:path=/run/user/1/bus"),
      (["XDG_RUNTIME_DIR": "/run/user/1"], false, nil),
      ([:], true, nil),
    ] as [([String: String], Bool, String?)])
  func busAddress(env: [String: String], socketExists: Bool, address: String?) {
    #expect(DesktopNotifier.busAddress(env, isSocket: { _ in socketExists }) == address)
  }
}
