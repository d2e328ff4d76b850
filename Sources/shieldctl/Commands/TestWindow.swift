import CaptureShield

/// `shieldctl test-window`: a solid-colour window for demos and tests.
struct TestWindowCommand: Command {
  static let name = "test-window"
  static let abstract = "Open a solid-colour test window (for demos and tests)."
  static let usage =
    "shieldctl test-window [--display D] [--color RRGGBB] [--title T] [--class C] [--geometry WxH+X+Y] [--tag] [--view WxH+X+Y] [--view-color RRGGBB] [--print-id]"
  static let help = """
    OVERVIEW: Open a solid-colour test window (for demos and tests).

    USAGE: shieldctl test-window [--display D] [--color RRGGBB] [--title T] [--class C] [--geometry WxH+X+Y] [--tag] [--view WxH+X+Y] [--view-color RRGGBB] [--print-id]

    Opens a window filled with one colour, painted by the program itself like a real
    application, and keeps it open until the program is killed. With --tag the window
    marks itself secure (sets _CAPTURE_SHIELD_SECURE = 1 before it is mapped), the way
    an application uses CaptureShield. Capture notifications the window receives from
    the daemon are printed.

    OPTIONS:
      --color RRGGBB        The fill colour in hex, e.g. ff0000 (a leading # is
                            accepted).
      --title T             The window title (_NET_WM_NAME and WM_NAME).
      --class C             The WM_CLASS class (the instance is C in lower case).
      --geometry WxH+X+Y    Size and position, e.g. 320x200+100+100 (+X+Y optional).
      --tag                 Tag the window as secure from the start.
      --view WxH+X+Y        A secure view: that rectangle of the window (window
                            coordinates) painted in --view-color and declared in
                            _CAPTURE_SHIELD_VIEWS before mapping; only it is hidden.
      --view-color RRGGBB   The view's colour (default ff0000).
      --print-id            Print the window id (0x...) on standard output once the
                            window is mapped.
      --display D           The X display (default: $DISPLAY).
      -h, --help            Show this help.

    EXIT STATUS:
      0   the window was closed
      1   cannot connect to the display, or an X error
      64  usage error
    """

  var options: TestWindowOptions

  static func parse(_ args: [String]) throws(UsageError) -> TestWindowCommand {
    let p = try ArgumentScanner.scan(
      args,
      options: [
        .value("--display"), .value("--color"), .value("--title"), .value("--class"), .value("--geometry"),
        .flag("--tag"), .flag("--print-id"), .value("--view"), .value("--view-color"),
      ])
    try p.expectPositionals(max: 0)
    var o = TestWindowOptions()
    o.display = try Common.display(p)
    if let color = p.value("--color") { o.color = try Values.color(color) }
    if let title = p.value("--title") { o.title = title }
    if let cls = p.value("--class") {
      guard !cls.isEmpty, !cls.contains("\0") else {
        throw UsageError("option '--class' requires a non-empty class name")
      }
      o.wmClass = cls
    }
    if let geometry = p.value("--geometry") {
      let g = try Values.geometry(geometry)
      o.width = g.width
      o.height = g.height
      if let x = g.x, let y = g.y {
        o.x = x
        o.y = y
      }
    }
    if let view = p.value("--view") {
      let g = try Values.geometry(view)
      o.view = (g.x ?? 0, g.y ?? 0, g.width, g.height)
    }
    if let c = p.value("--view-color") { o.viewColor = try Values.color(c) }
    o.tag = p.flag("--tag")
    o.printID = p.flag("--print-id")
    return TestWindowCommand(options: o)
  }

  func run() throws -> Int32 {
    TestWindow.run(options)
  }
}
