// swift-tools-version:6.0
import PackageDescription

/// Debian packages that provide the C libraries CXCB wraps.
let xcbDebianPackages = [
  "libxcb1-dev", "libxcb-composite0-dev", "libxcb-record0-dev", "libxcb-res0-dev",
  "libxcb-xfixes0-dev", "libxcb-shape0-dev", "libxcb-damage0-dev", "libxcb-shm0-dev",
  "libxcb-render0-dev", "libxcb-randr0-dev",
]

let package = Package(
  name: "CaptureShield",
  products: [
    .library(name: "CaptureShield", targets: ["CaptureShield"]),
    .library(name: "CaptureShieldCore", targets: ["CaptureShieldCore"]),
    .executable(name: "shieldctl", targets: ["shieldctl"]),
  ],
  targets: [
    .systemLibrary(
      name: "CXCB",
      path: "Sources/CXCB",
      pkgConfig: "xcb",
      providers: [.apt(xcbDebianPackages)]
    ),
    .systemLibrary(
      name: "CSodium",
      path: "Sources/CSodium",
      pkgConfig: "libsodium",
      providers: [.apt(["libsodium-dev"])]
    ),
    .systemLibrary(
      name: "CDBus",
      path: "Sources/CDBus",
      pkgConfig: "dbus-1",
      providers: [.apt(["libdbus-1-dev"])]
    ),
    // The pure core: policy, engine, decisions, decoders. No system library: the compiler
    // refuses an XCB, D-Bus or libsodium import here. The fuzzers (scripts/fuzz.sh) build it.
    .target(
      name: "CaptureShieldCore",
      path: "Sources/CaptureShieldCore"
    ),
    // The X shell: the daemon loop, RECORD, the X writers, the clipboard guard, D-Bus.
    .target(
      name: "CaptureShield",
      dependencies: ["CaptureShieldCore", "CXCB", "CSodium", "CDBus"],
      path: "Sources/CaptureShield"
    ),
    .executableTarget(
      name: "shieldctl",
      dependencies: ["CaptureShield"],
      path: "Sources/shieldctl"
    ),
    .target(
      name: "ShieldTestSupport",
      dependencies: ["CXCB"],
      path: "Sources/ShieldTestSupport"
    ),
    .executableTarget(
      name: "shieldbench",
      dependencies: ["CaptureShield", "CXCB", "ShieldTestSupport"],
      path: "Sources/shieldbench"
    ),
    .testTarget(
      name: "CaptureShieldTests",
      dependencies: ["CaptureShield", "CaptureShieldCore", "ShieldTestSupport"],
      path: "Tests/CaptureShieldTests",
      exclude: ["Golden"]
    ),
    .testTarget(
      name: "IntegrationTests",
      dependencies: ["CaptureShield", "CXCB", "ShieldTestSupport"],
      path: "Tests/IntegrationTests"
    ),
  ],
  swiftLanguageModes: [.v6]
)
